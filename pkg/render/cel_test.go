package render_test

import (
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Every OperationRuleSet expression compiles, with the type the
// in-flight-operations operator expects, in the environment it evaluates
// them in (one dynamic variable, object; no Kubernetes extensions: its
// internal/evaluator/program_cache.go), and evaluates without error on an
// empty object (every field read is guarded: one erroring rule drops the
// whole rule set for that object).
func TestOperationRuleSetExpressionsCompile(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(assets.FS)
	sets := 0
	for i := range cat.Assets {
		a := &cat.Assets[i]
		if a.Component != "OperationRuleSet" {
			continue
		}
		sets++
		u, err := r.Render(a.Path, &rendercontext.RenderContext{Namespace: "openshift-cnv"}, a.Params, nil)
		if err != nil {
			t.Fatal(err)
		}
		check := func(where, expr string, want *cel.Type) {
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Errorf("%s %s: %v", a.Name, where, iss.Err())
				return
			}
			if ast.OutputType() != cel.DynType && !ast.OutputType().IsExactType(want) {
				t.Errorf("%s %s: returns %s, want %s", a.Name, where, ast.OutputType(), want)
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Errorf("%s %s: %v", a.Name, where, err)
				return
			}
			if _, _, err := prg.Eval(map[string]any{"object": map[string]any{"metadata": map[string]any{"name": "x", "namespace": "ns"}}}); err != nil {
				t.Errorf("%s %s: fails on an object without status: %v", a.Name, where, err)
			}
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		if len(rules) == 0 {
			t.Errorf("%s: no rules", a.Name)
		}
		for _, rl := range rules {
			m, _ := rl.(map[string]any)
			expr, _ := m["expression"].(string)
			check("rule "+m["operation"].(string), expr, cel.BoolType)
		}
		labels, _, _ := unstructured.NestedSlice(u.Object, "spec", "labelExpressions")
		for _, l := range labels {
			m, _ := l.(map[string]any)
			expr, _ := m["expression"].(string)
			check("label "+m["key"].(string), expr, cel.StringType)
		}
	}
	if sets == 0 {
		t.Fatal("no OperationRuleSet in the catalog")
	}
}
