package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/factsfile"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// The KRM function: render from a facts file handed over as a ResourceList
// (for example a kustomize exec transformer), by the same
// evaluation as render --facts-file.

const resourceListVersion = "config.kubernetes.io/v1"

// fnConfig keys (data of the functionConfig ConfigMap): a closed set.
var fnConfigKeys = map[string]string{
	"activation": "evaluate as if the HCO's platform.kubevirt.io/autopilot were this",
	"asset":      "only these assets (comma-separated)",
}

// fnKeys are the functionConfig's keys, sorted.
func fnKeys() []string {
	keys := make([]string, 0, len(fnConfigKeys))
	for k := range fnConfigKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func newFnCommand() *cobra.Command {
	var keys []string
	for _, k := range fnKeys() {
		keys = append(keys, "  "+k+": "+fnConfigKeys[k])
	}
	var keyFile string
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Run render as a KRM function: a cluster's facts in (ResourceList on stdin), the objects out",
		Long: `Run render as a KRM function (for example a kustomize exec transformer).

Input: a ResourceList on stdin whose items hold a facts file (written by
'render --kubeconfig ... --output facts'; its objects carry the
platform.kubevirt.io/facts-file mark, and config.kubernetes.io/local-config so
kustomize never emits them). Output: the ResourceList with the facts
replaced by the objects the controller would apply on that cluster,
exactly as 'render --facts-file' renders them; every other item passes
through. Notes and warnings go to results; an annotation not understood
is an error result and exit code 3, as for render.

functionConfig: an optional ConfigMap whose data may hold
` + strings.Join(keys, "\n"),
		Example: `  # kustomization.yaml
  resources: [cluster-a.facts.yaml]
  transformers: [autopilot.yaml]

  # autopilot.yaml
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: virt-platform-autopilot
    annotations:
      config.kubernetes.io/function: |
        exec:
          path: /usr/local/bin/` + Name + `
          args: [fn]   # [fn, --facts-key, /path/to/key] for a signed facts file

  kustomize build --enable-alpha-plugins --enable-exec .`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return &exitError{ExitError, err}
			}
			out, bad, err := runFn(in, keyFile)
			if err != nil {
				return &exitError{ExitError, err}
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return &exitError{ExitError, err}
			}
			if len(bad) > 0 {
				return &exitError{ExitInvalid, fmt.Errorf("%d asset(s) INVALID, left as they are until fixed:\n  %s", len(bad), strings.Join(bad, "\n  "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "facts-key", "", "a file holding the key that verifies the facts file (as render --facts-key); without it the facts may not carry patch or ignore-fields annotations")
	return cmd
}

// runFn turns a ResourceList of facts into one of rendered objects; bad
// lists the assets left alone for an annotation not understood.
func runFn(raw []byte, keyFile string) (out []byte, bad []string, err error) {
	rl, err := decodeResourceList(raw)
	if err != nil {
		return nil, nil, err
	}
	o, err := fnOptions(rl)
	if err != nil {
		return nil, nil, err
	}
	items, _, _ := unstructured.NestedSlice(rl, "items")
	var facts []*unstructured.Unstructured
	var passed []any
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("items[%d] is not an object", i)
		}
		u := &unstructured.Unstructured{Object: m}
		if factsfile.Marked(u) {
			facts = append(facts, u)
			continue
		}
		passed = append(passed, m)
	}
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return nil, nil, err
	}
	key, err := readFactsKey(keyFile)
	if err != nil {
		return nil, nil, err
	}
	in, err := factsInput(facts, cat, key)
	if err != nil {
		return nil, nil, fmt.Errorf("the items hold no usable facts file: %w", err)
	}
	e, err := evaluate(context.Background(), o, staticSource{in})
	if err != nil {
		return nil, nil, err
	}
	var results []any
	add := func(severity, msg string) {
		results = append(results, map[string]any{"message": msg, "severity": severity})
	}
	for _, n := range e.in.Notes {
		add("info", n)
	}
	if e.act.Paused {
		add("warning", pausedWarning(e.act, `the functionConfig's activation: "true"`))
	}
	for _, n := range e.notices {
		add("warning", n.Message)
	}
	ds := filter(e.eval.Decisions, o.assets)
	bad = invalid(ds)
	for _, b := range bad {
		add("error", b+"; left as it is until fixed")
	}
	for _, en := range preview.Entries(ds, false) {
		if en.Object != nil {
			passed = append(passed, en.Object)
		}
	}
	res := map[string]any{"apiVersion": resourceListVersion, "kind": "ResourceList", "items": passed}
	if len(results) > 0 {
		res["results"] = results
	}
	out, err = objyaml.Marshal(res)
	return out, bad, err
}

// decodeResourceList reads a ResourceList in YAML or JSON, integers as
// int64 as the API machinery holds them (a float64 would compare unequal
// with what a template renders).
func decodeResourceList(raw []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("read the ResourceList on stdin: %w", err)
	}
	var rl map[string]any
	if err := utiljson.Unmarshal(js, &rl); err != nil {
		return nil, fmt.Errorf("read the ResourceList on stdin: %w", err)
	}
	if rl["kind"] != "ResourceList" {
		return nil, fmt.Errorf("stdin holds a %v, not a ResourceList: run me as a KRM function (kustomize, kpt)", rl["kind"])
	}
	return rl, nil
}

// fnOptions reads the functionConfig: a ConfigMap whose data uses only
// the keys fnConfigKeys names.
func fnOptions(rl map[string]any) (renderOptions, error) {
	o := renderOptions{output: "yaml"}
	fc, ok := rl["functionConfig"].(map[string]any)
	if !ok || fc == nil {
		return o, nil
	}
	cfg := &unstructured.Unstructured{Object: fc}
	if cfg.GetAPIVersion() != "v1" || cfg.GetKind() != "ConfigMap" {
		return o, fmt.Errorf("functionConfig %s %s: want a v1 ConfigMap (data keys: %s)", cfg.GetAPIVersion(), cfg.GetKind(), strings.Join(fnKeys(), ", "))
	}
	data, _, err := unstructured.NestedStringMap(fc, "data")
	if err != nil {
		return o, fmt.Errorf("functionConfig %s: data: %w", cfg.GetName(), err)
	}
	for k, v := range data {
		switch k {
		case "activation":
			o.activation = &v
		case "asset":
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					o.assets = append(o.assets, a)
				}
			}
		default:
			return o, fmt.Errorf("functionConfig %s: data key %q is not understood: want %s", cfg.GetName(), k, strings.Join(fnKeys(), " or "))
		}
	}
	return o, o.validateAssets()
}

// staticSource serves an Input already read.
type staticSource struct{ in Input }

func (s staticSource) Read(context.Context, *catalog.Catalog) (Input, error) { return s.in, nil }

func (staticSource) Diff(context.Context, *rendercontext.RenderContext, []engine.Decision, bool, io.Writer) error {
	return errDiffNeedsCluster
}
