package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// kustomizeBinary is kustomize built from Go modules (hack/kustomize.sh):
// $KUSTOMIZE, which make test sets, else bin/tools.
func kustomizeBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("KUSTOMIZE")
	if p == "" {
		p = filepath.Join(testenv.RepoRoot(), "bin", "tools", "kustomize")
	}
	if _, err := os.Stat(p); err != nil {
		why := "kustomize is not built (make kustomize)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: make test builds it", why)
		}
		testenv.NotRun(t.Name(), why)
		t.Skip(why)
	}
	return p
}

// docs reads YAML documents as objects keyed kind/namespace/name.
func docs(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		u := unstructured.Unstructured{Object: m}
		b, _ := json.Marshal(m)
		var norm any
		_ = json.Unmarshal(b, &norm)
		out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = norm
	}
}

// docsFunctionConfig is the yaml block of docs/fleet.md that configures
// the KRM function.
func docsFunctionConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], "config.kubernetes.io/function") {
			return m[1]
		}
	}
	t.Fatal("docs/fleet.md shows no function configuration")
	return ""
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The real kustomize, running the shipped binary as an exec KRM function
// on a cluster's facts, builds exactly the objects render --facts-file
// renders; the facts never reach its output, the pipeline's own objects
// pass through, and the function's configuration chooses assets.
func TestKustomizeRunsTheFunction(t *testing.T) {
	kustomize := kustomizeBinary(t)
	bin := buildTo(t, t.TempDir(), "./cmd/virt-platform-autopilot")
	root := testenv.RepoRoot()
	samples := filepath.Join(root, "config", "samples")

	hco, err := os.ReadFile(filepath.Join(samples, "hco.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]string{
		"sample": string(hco),
		// Swap off by exclusion, the descheduler's load-aware profile on.
		"customized": strings.Replace(string(hco), "  annotations:\n", "  annotations:\n    platform.kubevirt.io/disabled-resources: MachineConfig/90-worker-kubevirt-swap\n    platform.kubevirt.io/enable-loadaware: \"true\"\n", 1),
	}
	if variants["customized"] == variants["sample"] {
		t.Fatal("config/samples/hco.yaml has no annotations block to extend")
	}
	for name, hcoYAML := range variants {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hcoFile := filepath.Join(dir, "hco.yaml")
			if err := os.WriteFile(hcoFile, []byte(hcoYAML), 0o600); err != nil {
				t.Fatal(err)
			}
			facts, err := exec.Command(bin, "render", "--hco-file", hcoFile, "--nodes-file", filepath.Join(samples, "nodes.yaml"), "-o", "facts").Output()
			if err != nil {
				t.Fatalf("render -o facts: %v", err)
			}
			factsFile := filepath.Join(dir, "cluster.facts.yaml")
			write := func(name, content string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("cluster.facts.yaml", string(facts))
			write("mine.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\n  namespace: default\ndata:\n  a: b\n")
			write("kustomization.yaml", "resources: [cluster.facts.yaml, mine.yaml]\ntransformers: [autopilot.yaml]\n")
			// The function's configuration as docs/fleet.md shows it, with
			// the binary just built.
			documented := strings.ReplaceAll(docsFunctionConfig(t), "/usr/local/bin/virt-platform-autopilot", bin)
			fnConfig := func(cfg string) { write("autopilot.yaml", cfg) }
			build := func() map[string]any {
				t.Helper()
				cmd := exec.Command(kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("kustomize build: %v\n%s", err, stderr.String())
				}
				return docs(t, out)
			}
			rendered := func(args ...string) map[string]any {
				t.Helper()
				out, err := exec.Command(bin, append([]string{"render", "--facts-file", factsFile, "-o", "json"}, args...)...).Output()
				if err != nil {
					t.Fatalf("render --facts-file: %v", err)
				}
				var entries []struct {
					Object map[string]any `json:"object"`
				}
				if err := json.Unmarshal(out, &entries); err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				for _, e := range entries {
					if e.Object != nil {
						j, _ := json.Marshal(e.Object)
						b.Write(j)
						b.WriteString("\n")
					}
				}
				return docs(t, b.Bytes())
			}

			all, chosen, ok := strings.Cut(documented, "\ndata:\n")
			if !ok {
				t.Fatalf("the documented configuration has no data:\n%s", documented)
			}
			fnConfig(all)
			got, want := build(), rendered()
			mine := "ConfigMap/default/mine"
			if _, ok := got[mine]; !ok {
				t.Fatalf("the pipeline's own object did not pass through: %v", keys(got))
			}
			delete(got, mine)
			if len(want) < 5 {
				t.Fatalf("render gave %d objects: %v", len(want), keys(want))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("kustomize built %v\nrender gave %v", keys(got), keys(want))
			}

			// The documented configuration chooses assets.
			fnConfig(documented)
			var args []string
			for _, a := range strings.Split(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(chosen), "asset:")), ",") {
				args = append(args, "--asset", strings.TrimSpace(a))
			}
			got, want = build(), rendered(args...)
			delete(got, mine)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("with assets chosen, kustomize built %v\nrender gave %v", keys(got), keys(want))
			}
		})
	}
}
