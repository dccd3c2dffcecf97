package nodecheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	v34 "github.com/coreos/ignition/v2/config/v3_4"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ignitionConfig returns spec.config of a MachineConfig as raw JSON, nil
// when it has none (MCO then skips Ignition: ValidateMachineConfig).
func ignitionConfig(mc *unstructured.Unstructured) ([]byte, error) {
	cfg, ok := mc.Object["spec"].(map[string]any)["config"]
	if !ok || cfg == nil {
		return nil, nil
	}
	return json.Marshal(cfg)
}

// problems lists a report's errors and warnings. Warnings count: a config
// Ignition warns about (an unused key is a misspelled field, dropped) does
// not do what it says. None is justified today; one that is must be
// filtered here, with the reason.
func problems(r report.Report) []string {
	var out []string
	for _, e := range r.Entries {
		if e.Kind == report.Error || e.Kind == report.Warn {
			out = append(out, e.String())
		}
	}
	return out
}

// parseIgnition parses raw as MCO of that spec does (IgnParseWrapper:
// ParseCompatibleVersion of the spec it imports as ign3, which validates
// each version and translates older 3.x up). It returns the parsed config
// (t34.Config or t35.Config) and every error and warning.
func parseIgnition(raw []byte, spec string) (any, []string) {
	var (
		cfg any
		rpt report.Report
		err error
	)
	switch spec {
	case "3.4":
		cfg, rpt, err = v34.ParseCompatibleVersion(raw)
	case "3.5":
		cfg, rpt, err = v35.ParseCompatibleVersion(raw)
	default:
		return nil, []string{"unknown Ignition spec " + spec}
	}
	out := problems(rpt)
	if err != nil {
		out = append(out, fmt.Sprintf("parsing Ignition config spec v%s failed with error: %v", spec, err))
	}
	return cfg, out
}

// mergePool merges the pool's configs as MCO does (MergeMachineConfigs):
// in the order given (worker-role first, then by name), every file whose
// overwrite is unset made overwrite=true and unset compression "" before
// each merge; then validates the result as the render controller
// re-validates a rendered config (ValidateIgnition: validate.ValidateWithContext
// with no raw, then the file-mode rule).
func mergePool(cfgs []any, spec string) (merged any, out []string) {
	tr := true
	empty := ""
	switch spec {
	case "3.4":
		acc := t34.Config{Ignition: t34.Ignition{Version: "3.4.0"}}
		for _, c := range cfgs {
			next := c.(t34.Config)
			for i := range next.Storage.Files {
				f := &next.Storage.Files[i]
				if f.Overwrite == nil {
					f.Overwrite = &tr
				}
				if f.Contents.Compression == nil {
					f.Contents.Compression = &empty
				}
			}
			acc = v34.Merge(acc, next)
		}
		return acc, problems(validate.ValidateWithContext(acc, nil))
	case "3.5":
		acc := t35.Config{Ignition: t35.Ignition{Version: "3.5.0"}}
		for _, c := range cfgs {
			next := c.(t35.Config)
			for i := range next.Storage.Files {
				f := &next.Storage.Files[i]
				if f.Overwrite == nil {
					f.Overwrite = &tr
				}
				if f.Contents.Compression == nil {
					f.Contents.Compression = &empty
				}
			}
			acc = v35.Merge(acc, next)
		}
		return acc, problems(validate.ValidateWithContext(acc, nil))
	}
	return nil, []string{"unknown Ignition spec " + spec}
}

// ignitionSpecs are the specs the releases parse to.
func ignitionSpecs() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range releases {
		if !seen[r.ignition] {
			seen[r.ignition] = true
			out = append(out, r.ignition)
		}
	}
	sort.Strings(out)
	return out
}

// TestIgnition: every MachineConfig's config parses and validates without
// an error or a warning under each Ignition spec a release uses.
func TestIgnition(t *testing.T) {
	r := renderAll(t)
	n := 0
	for _, o := range r.Objects {
		if o.Kind != "MachineConfig" {
			continue
		}
		raw, err := ignitionConfig(o.Obj)
		if err != nil {
			t.Fatal(err)
		}
		if raw == nil {
			continue
		}
		for _, spec := range ignitionSpecs() {
			n++
			if _, errs := parseIgnition(raw, spec); len(errs) > 0 {
				t.Errorf("%s (%s) under Ignition %s, rendered for %s: %v", o.Name, o.Asset, spec, o.Cases[0], errs)
			}
		}
	}
	if n == 0 {
		t.Fatal("no MachineConfig with an Ignition config was rendered: the matrix lost them")
	}
}
