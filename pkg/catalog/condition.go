package catalog

import (
	"fmt"
	"strings"
)

// ConditionType names one kind of activation check.
type ConditionType string

// The condition types an asset can require. All conditions of an asset must hold.
const (
	// CondAnnotation holds when the HCO carries Key with Value ("" = any value).
	CondAnnotation ConditionType = "annotation"
	// CondFeatureGate holds when HCO spec.featureGates enables Name.
	CondFeatureGate ConditionType = "feature-gate"
	// CondHardware holds when the named Detector found hardware on some node.
	CondHardware ConditionType = "hardware"
	// CondHCOFieldUnconfigured holds when Path (dot separated) is unset, null
	// or empty on the effective HCO: the asset fills a gap, never overrides.
	CondHCOFieldUnconfigured ConditionType = "hco-field-unconfigured"
	// CondTopology holds when topology Field equals Value ("true" if empty).
	CondTopology ConditionType = "topology"
	// CondImage holds when the operand image Name is configured (the
	// environment variable RELATED_IMAGE_<NAME>, as OLM sets it). Until
	// then the asset waits, reported as a missing dependency.
	CondImage ConditionType = "image"
	// CondStorageClass holds when some StorageProfile offers Value
	// ("<accessMode>/<volumeMode>", e.g. ReadWriteMany/Filesystem), or the
	// HCO annotation Key (optional) names a class. Until then the asset
	// waits, reported as a missing dependency.
	CondStorageClass ConditionType = "storage-class"
	// CondCRDField holds when the CRD Name (the asset's gate_crd, whose
	// schema is kept) declares the dot path Path: the installed operator's
	// API has the field the asset writes.
	CondCRDField ConditionType = "crd-field"
	// CondKubeletConfigDir holds when whether the kubelet of the asset's
	// pool role (Params pool or role) reads the drop-in folder
	// /etc/openshift/kubelet.conf.d equals Value ("true" if empty): read
	// from MCO's kubelet.service in MachineConfig 01-<role>-kubelet, which
	// the asset must declare under reads. A derived fact.
	CondKubeletConfigDir ConditionType = "kubelet-config-dir"
)

// Waits reports whether a condition that does not hold makes an otherwise
// active asset wait for a dependency (reported) rather than be inactive.
func (c Condition) Waits() bool { return c.Type == CondImage || c.Type == CondStorageClass }

// Detectors are the hardware facts a RenderContext provides.
var Detectors = []string{"pciDevices", "numa", "iommu", "usbDevices", "gpu", "sriov"}

// TopologyFields are the boolean topology facts a RenderContext provides.
var TopologyFields = []string{"openshift", "schedulableMasters", "singleNode", "compact", "externalControlPlane"}

// Condition is one activation check. Only the fields of its Type may be set.
type Condition struct {
	Type     ConditionType `json:"type"`
	Key      string        `json:"key,omitempty"`
	Value    *string       `json:"value,omitempty"`
	Name     string        `json:"name,omitempty"`
	Detector string        `json:"detector,omitempty"`
	Path     string        `json:"path,omitempty"`
	Field    string        `json:"field,omitempty"`
}

// String describes the condition for status output and docs.
func (c Condition) String() string {
	switch c.Type {
	case CondAnnotation:
		if c.Value == nil || *c.Value == "" {
			return fmt.Sprintf("HCO annotation %s is set", c.Key)
		}
		return fmt.Sprintf("HCO annotation %s=%q", c.Key, *c.Value)
	case CondFeatureGate:
		return fmt.Sprintf("HCO feature gate %s is enabled", c.Name)
	case CondHardware:
		return fmt.Sprintf("hardware %s detected", c.Detector)
	case CondHCOFieldUnconfigured:
		return fmt.Sprintf("HCO %s is not configured", c.Path)
	case CondTopology:
		return fmt.Sprintf("topology %s=%s", c.Field, c.want())
	case CondImage:
		return fmt.Sprintf("image %s is set (%s)", c.Name, ImageEnv(c.Name))
	case CondCRDField:
		return fmt.Sprintf("CRD %s has field %s", c.Name, c.Path)
	case CondKubeletConfigDir:
		if c.WantBool() {
			return "the pool's kubelet reads the drop-in folder /etc/openshift/kubelet.conf.d"
		}
		return "the pool's kubelet reads no drop-in folder"
	case CondStorageClass:
		if c.Key != "" {
			return fmt.Sprintf("a storage class offers %s (or HCO annotation %s names one)", c.want(), c.Key)
		}
		return fmt.Sprintf("a storage class offers %s", c.want())
	}
	return string(c.Type)
}

// Access returns a storage-class condition's access and volume modes.
func (c Condition) Access() (accessMode, volumeMode string) {
	accessMode, volumeMode, _ = strings.Cut(c.want(), "/")
	return accessMode, volumeMode
}

// WantBool is the value a topology condition expects.
func (c Condition) WantBool() bool { return c.want() == "true" }

// Want is the value the condition holds for ("true" when none is given).
func (c Condition) Want() string { return c.want() }

func (c Condition) want() string {
	if c.Value == nil || *c.Value == "" {
		return "true"
	}
	return *c.Value
}

func (c Condition) validate() error {
	set := map[string]bool{
		"key": c.Key != "", "value": c.Value != nil, "name": c.Name != "",
		"detector": c.Detector != "", "path": c.Path != "", "field": c.Field != "",
	}
	allowed := map[ConditionType][]string{
		CondAnnotation:           {"key", "value"},
		CondFeatureGate:          {"name"},
		CondHardware:             {"detector"},
		CondHCOFieldUnconfigured: {"path"},
		CondTopology:             {"field", "value"},
		CondImage:                {"name"},
		CondStorageClass:         {"key", "value"},
		CondCRDField:             {"name", "path"},
		CondKubeletConfigDir:     {"value"},
	}
	required := map[ConditionType]string{
		CondAnnotation: "key", CondFeatureGate: "name", CondHardware: "detector",
		CondHCOFieldUnconfigured: "path", CondTopology: "field", CondImage: "name", CondStorageClass: "value",
		CondCRDField: "name", CondKubeletConfigDir: "",
	}
	fields, ok := allowed[c.Type]
	if !ok {
		return fmt.Errorf("unknown type %q (want annotation, feature-gate, hardware, hco-field-unconfigured, topology, image, storage-class, crd-field or kubelet-config-dir)", c.Type)
	}
	if c.Type == CondCRDField && c.Path == "" {
		return fmt.Errorf("%s condition needs \"path\"", c.Type)
	}
	if r := required[c.Type]; r != "" && !set[r] {
		return fmt.Errorf("%s condition needs %q", c.Type, required[c.Type])
	}
	for f, isSet := range set {
		if isSet && !contains(fields, f) {
			return fmt.Errorf("%s condition does not take %q", c.Type, f)
		}
	}
	switch c.Type {
	case CondHardware:
		if !contains(Detectors, c.Detector) {
			return fmt.Errorf("unknown detector %q (known: %s)", c.Detector, strings.Join(Detectors, ", "))
		}
	case CondKubeletConfigDir:
		if w := c.want(); w != "true" && w != "false" {
			return fmt.Errorf("kubelet-config-dir value must be \"true\" or \"false\", got %q", w)
		}
	case CondTopology:
		if !contains(TopologyFields, c.Field) {
			return fmt.Errorf("unknown topology field %q (known: %s)", c.Field, strings.Join(TopologyFields, ", "))
		}
		if w := c.want(); w != "true" && w != "false" {
			return fmt.Errorf("topology value must be \"true\" or \"false\", got %q", w)
		}
	case CondStorageClass:
		if a, m, ok := strings.Cut(c.want(), "/"); !ok || a == "" || m == "" {
			return fmt.Errorf("storage-class value %q must be <accessMode>/<volumeMode>, like ReadWriteMany/Filesystem", c.want())
		}
	case CondImage:
		if !assetName.MatchString(c.Name) {
			return fmt.Errorf("image name %q must be lower-case alphanumerics and dashes (RELATED_IMAGE_<NAME> upper-cased)", c.Name)
		}
	case CondHCOFieldUnconfigured:
		if strings.HasPrefix(c.Path, ".") || strings.HasSuffix(c.Path, ".") || strings.Contains(c.Path, "..") {
			return fmt.Errorf("path %q must be dot separated, like spec.virtualization.ksmConfiguration", c.Path)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ImagePrefix starts the environment variables naming operand images.
const ImagePrefix = "RELATED_IMAGE_"

// ImageEnv is the environment variable naming image name
// (kubevirt-metrics-exporter: RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER).
func ImageEnv(name string) string {
	return ImagePrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ImageName is the inverse of ImageEnv ("" when env is not an image variable).
func ImageName(env string) string {
	rest, ok := strings.CutPrefix(env, ImagePrefix)
	if !ok || rest == "" {
		return ""
	}
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
}
