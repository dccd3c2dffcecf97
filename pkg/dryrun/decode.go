package dryrun

import (
	"fmt"
	"unicode/utf8"

	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// decodeFiles shows the files of a MachineConfig as a person reads them:
// each Ignition file whose contents are a data URL of text gets its text
// under contents.decoded, and its source becomes a note of what it was, so
// a diff shows the lines that change, not two base64 strings. A preview's
// display only (Ignition has no such field); sources that are not text,
// not data URLs or not understood are left as they are. Decoded with the
// library Ignition and MCO decode data URLs with (MCO
// pkg/controller/common/helpers.go DecodeIgnitionFileContents).
func decodeFiles(u *unstructured.Unstructured) {
	if u.GetKind() != "MachineConfig" || u.GroupVersionKind().Group != "machineconfiguration.openshift.io" {
		return
	}
	files, ok, _ := unstructured.NestedSlice(u.Object, "spec", "config", "storage", "files")
	if !ok {
		return
	}
	for _, f := range files {
		file, ok := f.(map[string]any)
		if !ok {
			continue
		}
		contents, ok := file["contents"].(map[string]any)
		if !ok {
			continue
		}
		src, ok := contents["source"].(string)
		if !ok {
			continue
		}
		d, err := dataurl.DecodeString(src)
		if err != nil || !utf8.Valid(d.Data) {
			continue
		}
		contents["source"] = fmt.Sprintf("(a %s data URL of %d bytes: its text is shown under decoded)", d.ContentType(), len(d.Data))
		contents["decoded"] = string(d.Data)
	}
	_ = unstructured.SetNestedSlice(u.Object, files, "spec", "config", "storage", "files")
}
