// Package assets embeds the asset catalog, its templates and the tombstones.
package assets

import "embed"

// FS holds metadata.yaml (and its compiled form, see catalog.CompiledSuffix),
// every template it names and tombstones/.
//
//go:embed metadata.yaml metadata.yaml.compiled.json hco machine-config descheduler kubelet node-health operators observability logging in-flight-operations kubevirt-metrics-exporter tombstones
var FS embed.FS

// CatalogPath is the catalog's path inside FS.
const CatalogPath = "metadata.yaml"

// TombstonesDir is the folder inside FS holding one sub-folder per release.
const TombstonesDir = "tombstones"
