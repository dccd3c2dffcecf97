package nodecheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MCO's render-time rules for one MachineConfig, beyond Ignition's own
// (openshift/machine-config-operator; node-rules.md section 1):
//   - pkg/controller/common/helpers.go ValidateMachineConfig: kernelType,
//     validateIgn3FileModes (no mode above 0777), extensions against
//     SupportedExtensions;
//   - pkg/controller/common/reconcile.go isConfigReconcilable: sections a
//     running pool can never change (passwd groups and non-core users,
//     Ignition kernelArguments, disks, filesystems, raid, directories,
//     links, file append, the force file, FIPS) -- render-time refusals from
//     4.16 on (RenderDegraded), node-side before;
//   - pkg/daemon/file_writers.go writeFiles: only data: URLs are decoded on
//     the node (others pass render, then fail the node);
//   - helpers.go ValidateMachineConfigSize: MaxMachineConfigSize 1.5 MiB;
//   - getPoolsForMachineConfig: an MC without labels is in no pool.

// maxMachineConfigSize is MaxMachineConfigSize (helpers.go).
const maxMachineConfigSize = 1572864

var kernelTypes = map[string]bool{"": true, "default": true, "realtime": true, "64k-pages": true}

// supportedExtensions is SupportedExtensions() on MCO main.
var supportedExtensions = map[string]bool{"two-node-ha": true, "ipsec": true, "usbguard": true, "kerberos": true, "kernel-devel": true, "sandboxed-containers": true, "sysstat": true}

const roleLabel = "machineconfiguration.openshift.io/role"

// mcoRulesCheck returns every MCO refusal for one MachineConfig.
func mcoRulesCheck(mc *unstructured.Unstructured) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if mc.GetLabels()[roleLabel] == "" {
		bad("no %s label: no pool selects it", roleLabel)
	}
	spec, _ := mc.Object["spec"].(map[string]any)
	if kt, _ := spec["kernelType"].(string); !kernelTypes[kt] {
		bad("kernelType=%s is invalid", kt)
	}
	if fips, _ := spec["fips"].(bool); fips {
		bad("detected change to FIPS flag; refusing to modify FIPS on a running cluster")
	}
	exts, _ := spec["extensions"].([]any)
	for _, e := range exts {
		if s, _ := e.(string); !supportedExtensions[s] {
			bad("invalid extensions found: %v", e)
		}
	}
	kargs, _ := spec["kernelArguments"].([]any)
	for _, k := range kargs {
		s, _ := k.(string)
		// MCD passes each entry to rpm-ostree kargs --append after
		// splitting with kernel quoting rules: a blank or quote makes one
		// entry several arguments, or a literal quote.
		if s == "" || strings.ContainsAny(s, " \t\n\"'") {
			bad("kernel argument %q is not one argument", s)
		}
	}
	if js, err := json.Marshal(mc.Object); err == nil && len(js) > maxMachineConfigSize {
		bad("%d bytes, above MaxMachineConfigSize %d", len(js), maxMachineConfigSize)
	}
	cfg, _ := spec["config"].(map[string]any)
	if cfg == nil {
		return out
	}
	dig := func(m map[string]any, keys ...string) any {
		var v any = m
		for _, k := range keys {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	nonEmpty := func(v any) bool {
		l, _ := v.([]any)
		return len(l) > 0
	}
	if nonEmpty(dig(cfg, "passwd", "groups")) {
		bad("ignition Passwd Groups section contains changes")
	}
	users, _ := dig(cfg, "passwd", "users").([]any)
	for _, u := range users {
		if n, _ := u.(map[string]any)["name"].(string); n != "core" {
			bad("ignition passwd user section contains unsupported changes: non-core user %q", n)
		}
	}
	if dig(cfg, "kernelArguments") != nil {
		bad("ignition kargs section contains changes")
	}
	for _, s := range []string{"disks", "filesystems", "raid", "directories", "links"} {
		if nonEmpty(dig(cfg, "storage", s)) {
			bad("ignition %s section contains changes", s)
		}
	}
	files, _ := dig(cfg, "storage", "files").([]any)
	for _, f := range files {
		fm, _ := f.(map[string]any)
		p, _ := fm["path"].(string)
		if nonEmpty(fm["append"]) {
			bad("ignition file %s includes append", p)
		}
		if p == "/run/machine-config-daemon-force" {
			bad("cannot create /run/machine-config-daemon-force via Ignition")
		}
		if mode, ok := fm["mode"].(float64); ok && int(mode) > 0o777 {
			bad("invalid mode %#o for %s, cannot exceed 0777", int(mode), p)
		}
		src, _ := dig(fm, "contents", "source").(string)
		switch {
		case src == "" && fm["overwrite"] != false:
			// MergeMachineConfigs sets an unset overwrite to true, which
			// Ignition refuses without a source.
			bad("file %s has no contents.source and overwrite is not false", p)
		case src != "" && !strings.HasPrefix(src, "data:"):
			bad("file %s: source %q is not a data: URL, which is all the MCD decodes", p, src)
		}
	}
	return out
}

// TestMCORules: no MachineConfig breaks a rule MCO refuses at render time
// (or the MCD on the node).
func TestMCORules(t *testing.T) {
	r := renderAll(t)
	for _, o := range r.Objects {
		if o.Kind != "MachineConfig" {
			continue
		}
		for _, p := range mcoRulesCheck(o.Obj) {
			t.Errorf("%s (%s), rendered for %s: %s", o.Name, o.Asset, o.Cases[0], p)
		}
	}
}

// poolOrder is MCO's merge order of one pool's MachineConfigs
// (MergeMachineConfigs): worker-role ones first by name, then the others
// by name.
func poolOrder(objs []*nodeObject) []*nodeObject {
	var mcs []*nodeObject
	for _, o := range objs {
		if o.Kind == "MachineConfig" {
			mcs = append(mcs, o)
		}
	}
	sort.SliceStable(mcs, func(i, j int) bool {
		wi, wj := mcs[i].Obj.GetLabels()[roleLabel] == "worker", mcs[j].Obj.GetLabels()[roleLabel] == "worker"
		if wi != wj {
			return wi
		}
		return mcs[i].Name < mcs[j].Name
	})
	return mcs
}

// renderPool is what MCO renders from a pool's MachineConfigs for one
// Ignition spec: the merged config and every refusal of the merge (the
// rendered config re-validated; kernel arguments that contradict each
// other, which MCO concatenates without a check; the size limit).
func renderPool(p *poolSet, spec string) (any, []string) {
	var cfgs []any
	var out []string
	var kargs []string
	size := 0
	for _, o := range poolOrder(p.Objects) {
		size += len(o.JSON)
		ka, _ := o.Obj.Object["spec"].(map[string]any)["kernelArguments"].([]any)
		for _, k := range ka {
			s, _ := k.(string)
			kargs = append(kargs, s)
		}
		raw, err := ignitionConfig(o.Obj)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if raw == nil {
			continue
		}
		cfg, errs := parseIgnition(raw, spec)
		if len(errs) > 0 {
			out = append(out, fmt.Sprintf("%s: %v", o.Name, errs))
			continue
		}
		cfgs = append(cfgs, cfg)
	}
	merged, errs := mergePool(cfgs, spec)
	out = append(out, errs...)
	// The rendered MachineConfig holds ours and MCO's own: ours alone must
	// leave room under the limit.
	if size > maxMachineConfigSize {
		out = append(out, fmt.Sprintf("the pool's MachineConfigs total %d bytes, above MaxMachineConfigSize %d", size, maxMachineConfigSize))
	}
	out = append(out, kargConflicts(kargs)...)
	return merged, out
}

// kargConflicts: two of our arguments setting one kernel parameter to
// different values leave the result to the kernel's parse order.
func kargConflicts(kargs []string) []string {
	seen := map[string]string{}
	var out []string
	for _, k := range kargs {
		name, val, _ := strings.Cut(k, "=")
		if prev, ok := seen[name]; ok && prev != val {
			out = append(out, fmt.Sprintf("kernel argument %s is set to %q and to %q", name, prev, val))
		}
		seen[name] = val
	}
	return out
}

// TestPoolRender: each pool's MachineConfigs merge, under each release's
// Ignition spec, into a config MCO accepts.
func TestPoolRender(t *testing.T) {
	r := renderAll(t)
	for _, p := range r.Pools {
		for _, spec := range ignitionSpecs() {
			if _, errs := renderPool(p, spec); len(errs) > 0 {
				t.Errorf("pool %s under Ignition %s, rendered for %s: %v", p.Pool, spec, p.Cases[0], errs)
			}
		}
	}
}
