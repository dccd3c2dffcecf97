package render_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

const kdCRD = "kubedeschedulers.operator.openshift.io"

func deschedulerCRD(profiles []string, nodeLimit bool) *apiextensionsv1.CustomResourceDefinition {
	enum := []apiextensionsv1.JSON{}
	for _, p := range profiles {
		enum = append(enum, apiextensionsv1.JSON{Raw: []byte(`"` + p + `"`)})
	}
	limits := map[string]apiextensionsv1.JSONSchemaProps{"total": {Type: "integer"}}
	if nodeLimit {
		limits["node"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = kdCRD
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"profiles":       {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Enum: enum}}},
			"evictionLimits": {Properties: limits},
		}}}},
	}}}
	return crd
}

func TestDeschedulerProfileFallback(t *testing.T) {
	r := render.New(assets.FS)
	hco := map[string]any{"spec": map[string]any{"virtualization": map[string]any{"liveMigrationConfig": map[string]any{
		"parallelMigrationsPerCluster": int64(7), "parallelOutboundMigrationsPerNode": int64(3)}}}}
	cases := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		profile  string
		nodeSeen bool
	}{
		{"4.21", deschedulerCRD([]string{"LongLifecycle", "DevKubeVirtRelieveAndMigrate", "KubeVirtRelieveAndMigrate"}, true), "KubeVirtRelieveAndMigrate", true},
		{"4.19", deschedulerCRD([]string{"LongLifecycle", "DevKubeVirtRelieveAndMigrate"}, false), "DevKubeVirtRelieveAndMigrate", false},
		{"4.17", deschedulerCRD([]string{"AffinityAndTaints", "LongLifecycle"}, false), "LongLifecycle", false},
		{"offline", nil, "KubeVirtRelieveAndMigrate", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rendercontext.RenderContext{Namespace: "openshift-cnv", HCO: hco, CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{}}
			if tc.crd != nil {
				rc.CRDs[kdCRD] = tc.crd
			}
			u, err := r.Render("descheduler/loadaware.yaml.tpl", rc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			profiles, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "profiles")
			if len(profiles) != 1 || profiles[0] != tc.profile {
				t.Fatalf("profiles = %v, want %s", profiles, tc.profile)
			}
			total, _, _ := unstructured.NestedInt64(u.Object, "spec", "evictionLimits", "total")
			node, hasNode, _ := unstructured.NestedInt64(u.Object, "spec", "evictionLimits", "node")
			if total != 7 || hasNode != tc.nodeSeen || (hasNode && node != 3) {
				t.Fatalf("evictionLimits total=%d node=%d (present %v)", total, node, hasNode)
			}
		})
	}
}

func TestRenderRules(t *testing.T) {
	fsys := fstest.MapFS{
		"two.tpl":     {Data: []byte("apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n")},
		"missing.tpl": {Data: []byte("apiVersion: v1\nkind: A\nmetadata: {name: {{ .Params.nope }}}\n")},
		"clock.tpl":   {Data: []byte("{{ now }}")},
		"env.tpl":     {Data: []byte(`{{ env "HOME" }}`)},
		"noname.tpl":  {Data: []byte("apiVersion: v1\nkind: A\n")},
	}
	r := render.New(fsys)
	rc := &rendercontext.RenderContext{}
	for path, want := range map[string]string{
		"two.tpl": "exactly one object", "missing.tpl": "nope", "clock.tpl": "not defined",
		"env.tpl": "not defined", "noname.tpl": "metadata.name",
	} {
		_, err := r.Render(path, rc, nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want error containing %q, got %v", path, want, err)
		}
	}
}

// Documents split where kubectl splits them: at a line that is "---",
// with at most a comment after it; another line starting with "---" is
// refused, never split at.
func TestDocumentsSplitOnlyAtSeparatorLines(t *testing.T) {
	fsys := fstest.MapFS{
		"rule.tpl": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: \"one\n----\ntwo\"}\n")},
		"two.tpl":  {Data: []byte("apiVersion: v1\nkind: A\nmetadata: {name: a}\n--- # next\napiVersion: v1\nkind: B\nmetadata: {name: b}\n")},
		"lead.tpl": {Data: []byte("# head\n---\napiVersion: v1\nkind: A\nmetadata: {name: a}\n---\n")},
	}
	r := render.New(fsys)
	rc := &rendercontext.RenderContext{}
	// "----" at column 0 is not a separator: refused as one, never read
	// as two objects.
	if _, err := r.Render("rule.tpl", rc, nil, nil); err == nil || !strings.Contains(err.Error(), "document separator") {
		t.Errorf("rule.tpl: %v", err)
	}
	if _, err := r.Render("two.tpl", rc, nil, nil); err == nil || !strings.Contains(err.Error(), "exactly one object") {
		t.Errorf("a separator with a comment separates: %v", err)
	}
	if u, err := r.Render("lead.tpl", rc, nil, nil); err != nil || u.GetName() != "a" {
		t.Errorf("a leading comment document and a trailing separator are nothing: %v", err)
	}
}

func TestEveryAssetRendersOfflineAndStably(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(assets.FS)
	// A cluster with a default StorageClass (without one, the LokiStack
	// waits: TestLokiStackStorageClass).
	sc := &unstructured.Unstructured{}
	sc.SetName("standard")
	sc.SetAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
	for _, a := range cat.Assets {
		rc := &rendercontext.RenderContext{Namespace: "openshift-cnv"}
		rc.StorageClasses = []*unstructured.Unstructured{sc}
		u, err := r.Render(a.Path, rc, a.Params, nil)
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if u.GetKind() != a.Component {
			t.Errorf("%s renders a %s, the catalog says %s", a.Name, u.GetKind(), a.Component)
		}
		again, _ := r.Render(a.Path, rc, a.Params, nil)
		x, _ := u.MarshalJSON()
		y, _ := again.MarshalJSON()
		if string(x) != string(y) {
			t.Fatalf("%s renders differently twice", a.Name)
		}
	}
}

// Templates may only read switches the catalog declares, on a feature the
// asset belongs to: a typo cannot silently make a feature impossible to
// turn on, and the features view names every asset a switch changes.
func TestTemplatesUseDeclaredSwitches(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]string{} // switch -> assets of its feature
	for _, f := range cat.Features {
		if f.Switch != "" {
			members[f.Switch] = f.Members
		}
	}
	re := regexp.MustCompile(`switch\s+"([^"]+)"`)
	// And the other way: an asset a feature borrows reads its switch (or
	// the switch would change nothing there).
	for _, f := range cat.Features {
		for _, n := range f.Assets {
			a, _ := cat.Get(n)
			src, err := fs.ReadFile(assets.FS, a.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), `switch "`+f.Switch+`"`) {
				t.Errorf("feature %s lists asset %s, whose template never reads switch %q", f.Name, n, f.Switch)
			}
		}
	}
	for _, a := range cat.Assets {
		src, err := fs.ReadFile(assets.FS, a.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			assets, ok := members[m[1]]
			switch {
			case !ok:
				t.Errorf("%s reads switch %q, which no feature in metadata.yaml declares", a.Path, m[1])
			case !slices.Contains(assets, a.Name):
				t.Errorf("asset %s reads switch %q: list it in that feature's assets", a.Name, m[1])
			}
		}
	}
}

// An admin's AffinityAndTaints and SoftTopologyAndDuplicates profiles are
// kept; profiles that conflict with load-aware rebalancing are dropped.
func TestDeschedulerKeepsCompatibleProfiles(t *testing.T) {
	r := render.New(assets.FS)
	rc := &rendercontext.RenderContext{Namespace: "openshift-cnv", CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{
		kdCRD: deschedulerCRD([]string{"AffinityAndTaints", "SoftTopologyAndDuplicates", "LifecycleAndUtilization", "KubeVirtRelieveAndMigrate"}, true),
	}}
	live := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"profiles": []any{"SoftTopologyAndDuplicates", "LifecycleAndUtilization", "AffinityAndTaints"},
	}}}
	if !r.UsesLive("descheduler/loadaware.yaml.tpl") {
		t.Fatal("the descheduler template reads the live object")
	}
	u, err := r.Render("descheduler/loadaware.yaml.tpl", rc, nil, live)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "profiles")
	want := []string{"SoftTopologyAndDuplicates", "AffinityAndTaints", "KubeVirtRelieveAndMigrate"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("profiles = %v, want %v", got, want)
	}
}

// The shared cluster monitoring config: only nodeExporter.collectors.ksmd
// is the autopilot's; everything else an admin wrote is kept, byte for byte
// when nothing needs to change; an unreadable config or an explicit
// "enabled: false" fails the render (and a failed render writes nothing).
func TestClusterMonitoringConfigMerge(t *testing.T) {
	r := render.New(assets.FS)
	const path = "observability/cluster-monitoring-config.yaml.tpl"
	rc := &rendercontext.RenderContext{Namespace: "openshift-cnv"}
	live := func(cfg string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"config.yaml": cfg}}}
	}
	parse := func(u *unstructured.Unstructured) map[string]any {
		s, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml")
		out := map[string]any{}
		if err := yaml.Unmarshal([]byte(s), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	enabled := func(m map[string]any) any {
		v, _, _ := unstructured.NestedFieldNoCopy(m, "nodeExporter", "collectors", "ksmd", "enabled")
		return v
	}
	for _, in := range []*unstructured.Unstructured{nil, live(""), live("null\n")} {
		u, err := r.Render(path, rc, nil, in)
		if err != nil || enabled(parse(u)) != true {
			t.Fatalf("no config: %v %v", err, u)
		}
	}
	u, err := r.Render(path, rc, nil, live("# mine\nprometheusK8s:\n  retention: 15d\n  retentionSize: 1000000\nnodeExporter:\n  collectors:\n    netclass: {enabled: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := parse(u)
	if enabled(got) != true || got["prometheusK8s"].(map[string]any)["retention"] != "15d" {
		t.Fatalf("merge lost something: %v", got)
	}
	s, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml")
	if !strings.Contains(s, "retentionSize: 1000000") || !strings.Contains(s, "netclass") {
		t.Fatalf("numbers or siblings changed:\n%s", s)
	}
	const on = "# keep me\nnodeExporter:\n  collectors:\n    ksmd:\n      enabled: true\n"
	u, err = r.Render(path, rc, nil, live(on))
	if s, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml"); err != nil || s != on {
		t.Fatalf("already on must be kept byte for byte: %v %q", err, s)
	}
	for _, bad := range []string{"nodeExporter: [", "nodeExporter: false\n", "nodeExporter:\n  collectors:\n    ksmd:\n      enabled: false\n", "nodeExporter:\n  collectors: 3\n"} {
		if _, err := r.Render(path, rc, nil, live(bad)); err == nil {
			t.Errorf("config %q must fail the render", bad)
		}
	}
}

// A shared object is someone else's too: its template must merge into the
// live object, never render it from scratch.
func TestSharedAssetsMergeIntoLive(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(assets.FS)
	n := 0
	for _, a := range cat.Assets {
		if a.Shared {
			n++
			if !r.UsesLive(a.Path) {
				t.Errorf("shared asset %s: its template never reads .Live", a.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("no shared asset in the catalog")
	}
}

// Renders run concurrently (the reconcile and the debug endpoints share a
// Renderer): each sees its own context, through pooled clones and the
// decode memo, and callers may change what they get back.
func TestConcurrentRenders(t *testing.T) {
	r := render.New(assets.FS)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ns := fmt.Sprintf("ns-%d", i%3)
			for j := 0; j < 20; j++ {
				u, err := r.Render("observability/alerts.yaml.tpl", &rendercontext.RenderContext{Namespace: ns}, nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if u.GetNamespace() != ns {
					t.Errorf("rendered for %s, got %s", ns, u.GetNamespace())
				}
				u.SetNamespace("changed") // must not leak into the memo
			}
		}(i)
	}
	wg.Wait()
}

// Renders running at once each see their own context through the
// template functions, never another render's.
func TestConcurrentRendersSeeTheirOwnContext(t *testing.T) {
	fsys := fstest.MapFS{"cm.yaml.tpl": {Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  x: {{ if switch "enable-x" }}"on"{{ else }}"off"{{ end }}
`)}}
	r := render.New(fsys)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(on bool) {
			defer wg.Done()
			want := map[bool]string{true: "on", false: "off"}[on]
			rc := &rendercontext.RenderContext{HCO: map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{"platform.kubevirt.io/enable-x": fmt.Sprint(on)}}}}
			for j := 0; j < 50; j++ {
				u, err := r.Render("cm.yaml.tpl", rc, nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if got, _, _ := unstructured.NestedString(u.Object, "data", "x"); got != want {
					t.Errorf("switch on=%v rendered %q", on, got)
					return
				}
			}
		}(i%2 == 0)
	}
	wg.Wait()
}

func TestNamedTemplatesAreRefused(t *testing.T) {
	for _, src := range []string{`{{- define "b.yaml.tpl" }}x{{ end }}`, `{{ template "b.yaml.tpl" . }}`, `{{ block "x" . }}y{{ end }}`} {
		fsys := fstest.MapFS{"a.yaml.tpl": {Data: []byte(src)}, "b.yaml.tpl": {Data: []byte("kind: X")}}
		_, err := render.New(fsys).Render("a.yaml.tpl", &rendercontext.RenderContext{}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "may not define or call named templates") {
			t.Errorf("%s: want a refusal, got %v", src, err)
		}
	}
}

// The LokiStack's storage class: the live stack's (bound volumes never
// move), else the HCO annotation's, else the newest default class; with
// none the asset waits, and an annotation not understood is Invalid.
func TestLokiStackStorageClass(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := cat.Get("logging-lokistack")
	if !ok {
		t.Fatal("no asset logging-lokistack")
	}
	r := render.New(assets.FS)
	class := func(name string, isDefault bool, age int) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(age) * time.Hour)))
		if isDefault {
			u.SetAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
		}
		return u
	}
	classSets := map[string][]*unstructured.Unstructured{
		"none":         {class("fast", false, 1)},
		"one default":  {class("fast", false, 1), class("old-default", true, 5)},
		"two defaults": {class("old-default", true, 5), class("new-default", true, 1)},
	}
	newest := map[string]string{"none": "", "one default": "old-default", "two defaults": "new-default"}
	for _, live := range []string{"", "live-class"} {
		for _, ann := range []*string{nil, ptr(""), ptr(" named "), ptr("Not_A_Class")} {
			for set, classes := range classSets {
				rc := &rendercontext.RenderContext{Namespace: "openshift-cnv"}
				rc.StorageClasses = classes
				if ann != nil {
					rc.HCO = map[string]any{"metadata": map[string]any{"annotations": map[string]any{"platform.kubevirt.io/logging-storage-class": *ann}}}
				}
				var liveObj *unstructured.Unstructured
				if live != "" {
					liveObj = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"storageClassName": live}}}
				}
				name := fmt.Sprintf("live=%q ann=%v classes=%s", live, deref(ann), set)
				u, err := r.Render(a.Path, rc, a.Params, liveObj)
				_, waits := render.AsWait(err)
				_, invalid := annotations.AsInvalid(err)
				switch {
				case ann != nil && *ann == "Not_A_Class":
					if !invalid {
						t.Errorf("%s: want Invalid, got %v", name, err)
					}
				case live != "":
					checkClass(t, name, u, err, live)
				case ann != nil && *ann == " named ":
					checkClass(t, name, u, err, "named")
				case newest[set] != "":
					checkClass(t, name, u, err, newest[set])
				default:
					if !waits || !strings.Contains(err.Error(), "logging-storage-class") {
						t.Errorf("%s: want a wait naming the annotation, got %v", name, err)
					}
				}
			}
		}
	}
}

func checkClass(t *testing.T, name string, u *unstructured.Unstructured, err error, want string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if got, _, _ := unstructured.NestedString(u.Object, "spec", "storageClassName"); got != want {
		t.Errorf("%s: storageClassName %q, want %q", name, got, want)
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<absent>"
	}
	return fmt.Sprintf("%q", *s)
}

// uipluginCRD is a UIPlugin CRD whose spec.monitoring declares fields.
func uipluginCRD(fields ...string) *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, f := range fields {
		props[f] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "uiplugins.observability.openshift.io"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"monitoring": {Properties: props},
		}}}},
	}}}
	return crd
}

// Incident detection is switched on with the field the installed operator
// offers (every subset of the three fields, and offline), never one its
// schema lacks.
func TestMonitoringPluginFollowsTheSchema(t *testing.T) {
	r := render.New(assets.FS)
	all := []string{"clusterHealthAnalyzer", "incidents", "perses"}
	for mask := 0; mask <= 1<<len(all); mask++ {
		offline := mask == 1<<len(all)
		var fields []string
		for i, f := range all {
			if !offline && mask&(1<<i) != 0 {
				fields = append(fields, f)
			}
		}
		rc := &rendercontext.RenderContext{}
		if !offline {
			crd := uipluginCRD(fields...)
			rc.CRDs = map[string]*apiextensionsv1.CustomResourceDefinition{crd.Name: crd}
		}
		u, err := r.Render("operators/uiplugin-monitoring.yaml.tpl", rc, nil, nil)
		if err != nil {
			t.Fatalf("%v: %v", fields, err)
		}
		got, _, _ := unstructured.NestedMap(u.Object, "spec", "monitoring")
		want := map[string]any{}
		on := map[string]any{"enabled": true}
		switch {
		case offline || slices.Contains(fields, "clusterHealthAnalyzer"):
			want["clusterHealthAnalyzer"] = on
		case slices.Contains(fields, "incidents"):
			want["incidents"] = on
		}
		if offline || slices.Contains(fields, "perses") {
			want["perses"] = on
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("offline=%v fields %v: spec.monitoring %v, want %v", offline, fields, got, want)
		}
	}
}
