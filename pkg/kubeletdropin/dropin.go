// Package kubeletdropin reads and trims the kubelet settings a MachineConfig
// ships as drop-ins: files in the folder the kubelet merges over
// kubelet.conf (--config-dir=/etc/openshift/kubelet.conf.d), and the node
// sizing file MCO's sizing service reads. It knows which settings a
// KubeletConfig sets, which of them only work together, and leaves out of a
// MachineConfig the ones an admin's KubeletConfig holds, so the admin's
// value stays in effect.
package kubeletdropin

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Dir is the folder the kubelet reads drop-ins from, each a
// KubeletConfiguration merged over kubelet.conf in lexical order as a JSON
// merge patch (kubernetes cmd/kubelet/app/server.go,
// mergeKubeletConfigurations).
const Dir = "/etc/openshift/kubelet.conf.d/"

// SizingEnv is the node sizing file: kubelet-auto-node-size.service reads it
// at boot and gives the kubelet its system reservation from it
// (machine-config-operator templates/common/_base/files/
// kubelet-auto-sizing.yaml). MCO writes it from a KubeletConfig's
// autoSizingReserved and systemReserved instead of kubelet.conf
// (pkg/controller/kubelet-config/helpers.go, generateKubeletIgnFiles and
// createNewKubeletDynamicSystemReservedIgnition), so for a drop-in those two
// settings live here.
const SizingEnv = "/etc/node-sizing-enabled.env"

// sizingFields are the KubeletConfig settings SizingEnv carries.
var sizingFields = []string{"autoSizingReserved", "systemReserved"}

// File is one file of a MachineConfig as this package reads it.
type File struct {
	Path string
	Data []byte
}

// Files returns mc's kubelet drop-ins (sorted by path, as the kubelet
// merges them) and its sizing file (nil when it ships none).
func Files(mc *unstructured.Unstructured) (dropIns []File, sizing *File, err error) {
	files, _, err := unstructured.NestedSlice(mc.Object, "spec", "config", "storage", "files")
	if err != nil {
		return nil, nil, fmt.Errorf("spec.config.storage.files: %w", err)
	}
	for _, x := range files {
		f, _ := x.(map[string]any)
		path, _ := f["path"].(string)
		if !isDropIn(path) && path != SizingEnv {
			continue
		}
		src, _, _ := unstructured.NestedString(f, "contents", "source")
		data, err := decodeDataURL(src)
		if err != nil {
			return nil, nil, fmt.Errorf("file %s: %w", path, err)
		}
		if path == SizingEnv {
			sizing = &File{Path: path, Data: data}
			continue
		}
		dropIns = append(dropIns, File{Path: path, Data: data})
	}
	sort.Slice(dropIns, func(i, j int) bool { return dropIns[i].Path < dropIns[j].Path })
	return dropIns, sizing, nil
}

// isDropIn: a file the kubelet reads from Dir (subfolders included; only
// .conf files).
func isDropIn(path string) bool {
	return strings.HasPrefix(path, Dir) && strings.HasSuffix(path, ".conf")
}

// Settings is what mc's files set, in a KubeletConfig's spec shape (the
// form pkg/reservation checks): kubeletConfig holds every drop-in's fields
// merged in the kubelet's order; the sizing file gives autoSizingReserved
// and, when auto-sizing is off, systemReserved.
func Settings(mc *unstructured.Unstructured) (map[string]any, error) {
	dropIns, sizing, err := Files(mc)
	if err != nil {
		return nil, err
	}
	kc := map[string]any{}
	for _, f := range dropIns {
		m, err := decodeDropIn(f)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			kc[k] = v
		}
	}
	spec := map[string]any{"kubeletConfig": kc}
	if sizing != nil {
		env := parseEnv(sizing.Data)
		on := env["NODE_SIZING_ENABLED"] == "true"
		spec["autoSizingReserved"] = on
		if !on {
			kc["systemReserved"] = map[string]any{"memory": env["SYSTEM_RESERVED_MEMORY"], "cpu": env["SYSTEM_RESERVED_CPU"], "ephemeral-storage": env["SYSTEM_RESERVED_ES"]}
		}
	}
	return spec, nil
}

// Fields names the settings a KubeletConfig sets: the kubelet fields in
// spec.kubeletConfig, and autoSizingReserved when it is set (MCO moves
// both it and systemReserved into SizingEnv).
func Fields(kc *unstructured.Unstructured) []string {
	var out []string
	conf, _, _ := unstructured.NestedMap(kc.Object, "spec", "kubeletConfig")
	for k := range conf {
		out = append(out, k)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(kc.Object, "spec", "autoSizingReserved"); ok {
		out = append(out, "autoSizingReserved")
	}
	sort.Strings(out)
	return out
}

// notInKubeletConfig are the kubelet settings MCO refuses in a
// KubeletConfig (machine-config-operator pkg/controller/kubelet-config/
// helpers.go, validateUserKubeletConfig; failSwapOn and memorySwap from
// OCP 4.21, the first release whose kubelet reads drop-ins), so no
// KubeletConfig can hold them.
var notInKubeletConfig = map[string]bool{
	"cgroupDriver": true, "clusterDNS": true, "clusterDomain": true, "featureGates": true,
	"failSwapOn": true, "memorySwap": true,
}

// MayBeHeld reports whether a KubeletConfig could set something mc's
// drop-ins or sizing file set: a sizing file, or a drop-in field MCO
// accepts in a KubeletConfig.
func MayBeHeld(mc *unstructured.Unstructured) (bool, error) {
	dropIns, sizing, err := Files(mc)
	if err != nil || sizing != nil {
		return sizing != nil, err
	}
	for _, f := range dropIns {
		m, err := decodeDropIn(f)
		if err != nil {
			return false, err
		}
		for k := range m {
			if !notInKubeletConfig[k] {
				return true, nil
			}
		}
	}
	return false, nil
}

// Left is one setting left out of a MachineConfig, and the KubeletConfigs
// that hold it (or a setting it works only with).
type Left struct {
	Field          string
	KubeletConfigs []string
}

// LeaveOut removes from mc's drop-ins and sizing file every setting that
// held names (field -> the KubeletConfigs setting it), together with the
// settings that only work beside it (Coupled), and returns what it left
// out. A drop-in keeps its apiVersion and kind; a sizing file with a
// setting left out is removed whole (it sets the reservation as one).
func LeaveOut(mc *unstructured.Unstructured, held map[string][]string) ([]Left, error) {
	if len(held) == 0 {
		return nil, nil
	}
	dropIns, decoded, ours, err := settingsOf(mc)
	if err != nil {
		return nil, err
	}
	left := leftOut(ours, held)
	if len(left) == 0 {
		return nil, nil
	}
	leaving := map[string]bool{}
	for _, l := range left {
		leaving[l.Field] = true
	}
	files, _, _ := unstructured.NestedSlice(mc.Object, "spec", "config", "storage", "files")
	kept := files[:0:0]
	for _, x := range files {
		f, _ := x.(map[string]any)
		path, _ := f["path"].(string)
		switch {
		case path == SizingEnv && (leaving["autoSizingReserved"] || leaving["systemReserved"]):
			continue
		case isDropIn(path):
			i := slices.IndexFunc(dropIns, func(d File) bool { return d.Path == path })
			m, changed := decoded[i], false
			for k := range m {
				if leaving[k] {
					delete(m, k)
					changed = true
				}
			}
			if !changed {
				break // written as rendered, byte for byte
			}
			var data []byte
			if len(m) > 0 {
				if data, err = yaml.Marshal(m); err != nil {
					return nil, err
				}
			}
			if err := unstructured.SetNestedField(f, encodeDataURL(append([]byte(dropInHeader), data...)), "contents", "source"); err != nil {
				return nil, err
			}
		}
		kept = append(kept, f)
	}
	if err := unstructured.SetNestedSlice(mc.Object, kept, "spec", "config", "storage", "files"); err != nil {
		return nil, err
	}
	return left, nil
}

// leftOut decides what leaves: each of ours that held names, and every
// member of a coupled group whose anchor is ours once any member is held.
func leftOut(ours map[string]bool, held map[string][]string) []Left {
	by := map[string][]string{}
	for f := range ours {
		if kcs, ok := held[f]; ok {
			by[f] = append(by[f], kcs...)
		}
	}
	for _, g := range Coupled {
		if !ours[g.Anchor] {
			continue
		}
		var kcs []string
		for _, m := range append(slices.Clone(g.Members), g.Triggers...) {
			kcs = append(kcs, held[m]...)
		}
		if len(kcs) == 0 {
			continue
		}
		for _, m := range g.Members {
			if ours[m] {
				by[m] = append(by[m], kcs...)
			}
		}
	}
	out := make([]Left, 0, len(by))
	for f, kcs := range by {
		kcs = slices.Clone(kcs)
		sort.Strings(kcs)
		out = append(out, Left{Field: f, KubeletConfigs: slices.Compact(kcs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// dropInHeader starts every drop-in: the kubelet refuses one without it.
const dropInHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func decodeDropIn(f File) (map[string]any, error) {
	m := map[string]any{}
	// Numbers stay as written (json.Number): through float64 a large one
	// would be written back as 1e+06, which the kubelet refuses.
	if err := yaml.Unmarshal(f.Data, &m, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }); err != nil {
		return nil, fmt.Errorf("drop-in %s: %w", f.Path, err)
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	return m, nil
}

// parseEnv reads KEY=VALUE lines (the sizing script sources the file).
func parseEnv(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out
}

// Variants are every form LeaveOut can leave mc in, whatever settings
// admins' KubeletConfigs hold (mc itself among them): for what must admit
// each of them (the admission policy) without knowing the cluster's
// KubeletConfigs. Only the settings mc has, and those coupled to them,
// decide a form.
func Variants(mc *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	_, _, ours, err := settingsOf(mc)
	if err != nil {
		return nil, err
	}
	if len(ours) == 0 {
		return []*unstructured.Unstructured{mc}, nil
	}
	relevant := map[string]bool{}
	for k := range ours {
		relevant[k] = true
	}
	for _, g := range Coupled {
		for _, m := range append(slices.Clone(g.Members), g.Triggers...) {
			relevant[m] = true
		}
	}
	fields := make([]string, 0, len(relevant))
	for k := range relevant {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	if len(fields) > 20 {
		return nil, fmt.Errorf("MachineConfig %s: %d kubelet settings are too many to try every combination of", mc.GetName(), len(fields))
	}
	// Distinct forms come from distinct sets left out: leftOut is cheap,
	// LeaveOut runs once per set.
	seen := map[string]bool{}
	out := []*unstructured.Unstructured{mc}
	for mask := 1; mask < 1<<len(fields); mask++ {
		held := map[string][]string{}
		for i, f := range fields {
			if mask&(1<<i) != 0 {
				held[f] = []string{"admin"}
			}
		}
		left := leftOut(ours, held)
		if len(left) == 0 {
			continue
		}
		var key []string
		for _, l := range left {
			key = append(key, l.Field)
		}
		k := strings.Join(key, ",")
		if seen[k] {
			continue
		}
		seen[k] = true
		v := mc.DeepCopy()
		if _, err := LeaveOut(v, held); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// settingsOf reads mc's drop-ins, each decoded, and names the settings
// they and its sizing file set.
func settingsOf(mc *unstructured.Unstructured) (dropIns []File, decoded []map[string]any, ours map[string]bool, err error) {
	dropIns, sizing, err := Files(mc)
	if err != nil {
		return nil, nil, nil, err
	}
	ours = map[string]bool{}
	decoded = make([]map[string]any, len(dropIns))
	for i, f := range dropIns {
		if decoded[i], err = decodeDropIn(f); err != nil {
			return nil, nil, nil, err
		}
		for k := range decoded[i] {
			ours[k] = true
		}
	}
	if sizing != nil {
		for _, k := range sizingFields {
			ours[k] = true
		}
	}
	return dropIns, decoded, ours, nil
}
