package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hcoYAML = `apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata:
  name: kubevirt-hyperconverged
  namespace: openshift-cnv
  annotations:
    platform.kubevirt.io/enable-loadaware: "true"
    platform.kubevirt.io/enable-pci-passthrough: "true"
    platform.kubevirt.io/disabled-resources: "MachineConfig/90-worker-kubevirt-swap"
spec: {}
`

const nodesYAML = `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata:
      name: w0
      labels:
        node-role.kubernetes.io/worker: ""
        feature.node.kubernetes.io/pci-10de.present: "true"
        feature.node.kubernetes.io/cpu-model.vendor_id: AMD
`

// A KubeDescheduler CRD as OCP 4.17 ships it: no KubeVirt profile.
const descheduler417 = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kubedeschedulers.operator.openshift.io
spec:
  group: operator.openshift.io
  names: {kind: KubeDescheduler, plural: kubedeschedulers}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                profiles:
                  type: array
                  items: {type: string, enum: [AffinityAndTaints, LongLifecycle]}
                evictionLimits:
                  type: object
                  properties: {total: {type: integer}}
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, want int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Render(args, &out, &errOut); code != want {
		t.Fatalf("render %v: exit %d, want %d\n%s%s", args, code, want, out.String(), errOut.String())
	}
	return out.String() + errOut.String()
}

// Offline facts (nodes, CRDs) let hardware- and version-dependent assets be
// previewed: the profile falls back as on the real cluster.
func TestOfflineRenderWithFacts(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	nodes := write(t, dir, "nodes.yaml", nodesYAML)
	crds := write(t, dir, "kd.yaml", descheduler417)

	status := run(t, 0, "--hco-file", hco, "--nodes-file", nodes, "--crds", crds, "--output", "status")
	for _, want := range []string{
		"pci-passthrough ", "descheduler-loadaware ",
		"MISSING-DEPENDENCY", // MachineConfig's CRD was not among --crds
		"Summary:",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("status output lacks %q:\n%s", want, status)
		}
	}

	y := run(t, 0, "--hco-file", hco, "--nodes-file", nodes, "--asset", "descheduler-loadaware", "--asset", "pci-passthrough", "--output", "yaml")
	for _, want := range []string{"- KubeVirtRelieveAndMigrate", "- amd_iommu=on"} {
		if !strings.Contains(y, want) {
			t.Errorf("without --crds every kind is installed and the newest profile assumed; missing %q:\n%s", want, y)
		}
	}
	y = run(t, 0, "--hco-file", hco, "--crds", crds, "--asset", "descheduler-loadaware", "--output", "yaml")
	if !strings.Contains(y, "- LongLifecycle") || strings.Contains(y, "node:") {
		t.Errorf("with the 4.17 CRD: LongLifecycle and no per-node limit:\n%s", y)
	}

	excluded := run(t, 0, "--hco-file", hco, "--asset", "swap-enable", "--output", "json", "--show-excluded")
	if !strings.Contains(excluded, `"status": "EXCLUDED"`) || !strings.Contains(excluded, "disabled-resources") {
		t.Errorf("root exclusion shown with its reason:\n%s", excluded)
	}
}

func TestRenderErrors(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, args := range [][]string{
		{"--hco-file", hco, "--output", "diff"},
		{"--hco-file", hco, "--output", "toml"},
		{"--hco-file", hco, "--asset", "nope"},
		{"--hco-file", filepath.Join(dir, "missing.yaml")},
		{"--output", "status"},
	} {
		out := run(t, 2, args...)
		if !strings.Contains(out, "error:") {
			t.Errorf("%v: want a clear error, got %q", args, out)
		}
	}
}

// Flags that cannot take effect are refused, not ignored.
func TestRenderRefusesIgnoredFlags(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	notNodes := write(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	empty := write(t, dir, "empty.yaml", "---\n")
	for args, want := range map[string][]string{
		"kubeconfig beside hco-file": {"--hco-file", hco, "--kubeconfig", hco},
		"namespace beside hco-file":  {"--hco-file", hco, "-n", "x"},
		"nodes-file without Nodes":   {"--hco-file", hco, "--nodes-file", notNodes},
		"nodes-file empty":           {"--hco-file", hco, "--nodes-file", empty},
		"crds without CRDs":          {"--hco-file", hco, "--crds", notNodes},
		"offline fact against live":  {"--kubeconfig", hco, "--crds", notNodes},
	} {
		if out := run(t, ExitError, want...); !strings.Contains(out, "error:") {
			t.Errorf("%s: %q", args, out)
		}
	}
}

// What the controller reports as Events the CLI says on stderr; an invalid
// annotation exits 3 after the output.
func TestRenderWarningsAndInvalid(t *testing.T) {
	dir := t.TempDir()
	// A malformed root-exclusion entry may have meant any object: it is
	// named, and what reboots a pool is INVALID (left as it is) until fixed.
	hco := write(t, dir, "hco.yaml", strings.Replace(hcoYAML, "kubevirt-swap", "kubevirt-swap, broken", 1))
	var out, errOut bytes.Buffer
	if code := Render([]string{"--hco-file", hco, "-o", "status"}, &out, &errOut); code != ExitInvalid ||
		!strings.Contains(errOut.String(), "asset psi-enable: annotation platform.kubevirt.io/disabled-resources") {
		t.Fatalf("exit %d, want %d with psi-enable held: %s", code, ExitInvalid, errOut.String())
	}
	if !strings.Contains(errOut.String(), `warning: annotation platform.kubevirt.io/disabled-resources="broken" is not understood`) {
		t.Errorf("malformed disabled-resources entry not shown:\n%s", errOut.String())
	}

	// Every input not acted on as written is named: a switch that is not a
	// boolean (its assets INVALID, exit 3), a misspelt switch, an entry
	// that matches nothing the catalog renders.
	odd := strings.Replace(hcoYAML, "annotations:\n", "annotations:\n    platform.kubevirt.io/enable-logging: \"ture\"\n    platform.kubevirt.io/enable-loadawre: \"true\"\n", 1)
	odd = strings.Replace(odd, "MachineConfig/90-worker-kubevirt-swap", "machineconfig/90-worker-kubevirt-swap,\n MachineConfig/x", 1)
	out.Reset()
	errOut.Reset()
	code := Render([]string{"--hco-file", write(t, dir, "odd.yaml", odd), "-o", "status"}, &out, &errOut)
	for _, want := range []string{
		`platform.kubevirt.io/enable-logging="ture" is not understood`,
		`HCO annotation platform.kubevirt.io/enable-loadawre is not one the autopilot reads`,
		`entry "MachineConfig/x" matches no object`,
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("not reported: %s\n%s", want, errOut.String())
		}
	}
	if strings.Contains(errOut.String(), "90-worker-kubevirt-swap\" matches no object") {
		t.Errorf("a lower-case kind is a kind, as kubectl takes it:\n%s", errOut.String())
	}
	if code != ExitInvalid || !strings.Contains(errOut.String(), "annotation platform.kubevirt.io/enable-logging") {
		t.Errorf("a switch not understood: exit %d, want %d (its assets INVALID)\n%s", code, ExitInvalid, errOut.String())
	}

	v1beta1 := strings.Replace(hcoYAML, "spec: {}", "spec:\n  featureGates: {CPUManager: true}", 1)
	out.Reset()
	errOut.Reset()
	Render([]string{"--hco-file", write(t, dir, "b.yaml", v1beta1), "-o", "status"}, &out, &errOut)
	if !strings.Contains(errOut.String(), "featureGates is not a list") {
		t.Errorf("v1beta1 featureGates map read silently as off:\n%s", errOut.String())
	}

	broken := strings.Replace(hcoYAML, "annotations:\n", "annotations:\n    platform.kubevirt.io/patch: '[{\"op\":\"replace\",\"path\":\"/metadata\",\"value\":{}}]'\n", 1)
	out.Reset()
	errOut.Reset()
	code = Render([]string{"--hco-file", write(t, dir, "c.yaml", broken), "-o", "status"}, &out, &errOut)
	if code != ExitInvalid || !strings.Contains(out.String(), "INVALID") ||
		!strings.Contains(errOut.String(), "asset hco-golden-config: annotation platform.kubevirt.io/patch") {
		t.Errorf("invalid patch: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitInvalid, out.String(), errOut.String())
	}
}

// A cluster without nodes exports an empty List: that is a fact, not a mistake.
func TestRenderEmptyNodeList(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", hcoYAML)
	for _, empty := range []string{"apiVersion: v1\nkind: List\nitems: []\n", "apiVersion: v1\nkind: NodeList\nitems: null\n"} {
		run(t, ExitOK, "--hco-file", hco, "--nodes-file", write(t, dir, "n.yaml", empty), "-o", "status")
	}
}

const featuresHCO = `apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata:
  name: kubevirt-hyperconverged
  namespace: openshift-cnv
  annotations:
    platform.kubevirt.io/enable-node-remediation: "true"
    platform.kubevirt.io/enable-sbr-detection: "true"
    platform.kubevirt.io/enable-logging: "true"
    platform.kubevirt.io/enable-kubevirt-metrics-exporter: "true"
spec: {}
`

const clusterObjects = `apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: x
---
apiVersion: cdi.kubevirt.io/v1beta1
kind: StorageProfile
metadata: {name: nfs}
status:
  storageClass: nfs
  claimPropertySets: [{accessModes: [ReadWriteMany], volumeMode: Filesystem}]
---
apiVersion: fence-agents-remediation.medik8s.io/v1alpha1
kind: FenceAgentsRemediationTemplate
metadata: {name: fenceagentsremediationtemplate-default, namespace: openshift-workload-availability}
spec: {template: {spec: {agent: fence_ipmilan}}}
`

// The features view offline: without cluster objects the features that
// need them wait (with the reason); --objects-file supplies them, as a
// cluster would, and the same features are active.
func TestOfflineFeatures(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", featuresHCO)
	state := func(out, feature string) string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[0] == feature {
				return f[3]
			}
		}
		return ""
	}
	out := run(t, 0, "--hco-file", hco, "--output", "features")
	for f, want := range map[string]string{"node-remediation": "waiting", "sbr-detection": "waiting", "logging": "not-applicable", "kubevirt-metrics-exporter": "waiting", "aaq": "off"} {
		if got := state(out, f); got != want {
			t.Errorf("without objects: %s is %q, want %q\n%s", f, got, want, out)
		}
	}
	if !strings.Contains(out, "RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER") || !strings.Contains(out, "FenceAgentsRemediationTemplate") {
		t.Errorf("a waiting feature says what it waits for:\n%s", out)
	}
	objs := write(t, dir, "objects.yaml", clusterObjects)
	t.Setenv("RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER", "quay.io/x/exporter:1")
	out = run(t, 0, "--hco-file", hco, "--objects-file", objs, "--output", "features")
	for _, f := range []string{"node-remediation", "sbr-detection", "logging", "kubevirt-metrics-exporter"} {
		if got := state(out, f); got != "active" {
			t.Errorf("with objects: %s is %q, want active\n%s", f, got, out)
		}
	}
	y := run(t, 0, "--hco-file", hco, "--objects-file", objs, "--asset", "node-health-check", "--asset", "sbr-detect-only", "--asset", "logging-lokistack", "--output", "yaml")
	for _, want := range []string{"escalatingRemediations", "sharedStorageClass: nfs", "storageClassName: standard"} {
		if !strings.Contains(y, want) {
			t.Errorf("rendered from the objects: missing %q\n%s", want, y)
		}
	}
	bad := write(t, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: y}\n")
	if out := run(t, 2, "--hco-file", hco, "--objects-file", bad); !strings.Contains(out, "neither a fact") {
		t.Errorf("an object nothing reads is an error: %s", out)
	}
}

// The objects that decide pools are facts offline too: an admin's
// KubeletConfig on the worker pool makes the autopilot's Conflict, as the
// controller decides (engine.Clash), and a custom pool that takes worker's
// MachineConfigs is rolled with it.
func TestOfflinePoolsAndForeignKubeletConfig(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", "apiVersion: hco.kubevirt.io/v1\nkind: HyperConverged\nmetadata: {name: kubevirt-hyperconverged, namespace: openshift-cnv}\nspec: {}\n")
	pools := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
  labels: {pools.operator.machineconfiguration.openshift.io/worker: ""}
spec:
  nodeSelector: {matchLabels: {node-role.kubernetes.io/worker: ""}}
  machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: worker}}
---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: virt
  labels: {pools.operator.machineconfiguration.openshift.io/virt: ""}
spec:
  nodeSelector: {matchLabels: {node-role.kubernetes.io/virt: ""}}
  machineConfigSelector:
    matchExpressions: [{key: machineconfiguration.openshift.io/role, operator: In, values: [worker, virt]}]
`
	admin := `---
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata: {name: admin-max-pods}
spec:
  machineConfigPoolSelector: {matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}}
  kubeletConfig: {maxPods: 500}
`
	status := func(objects string) string {
		return run(t, 0, "--hco-file", hco, "--objects-file", write(t, dir, "objects.yaml", objects), "--output", "status")
	}
	line := func(out, asset string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, asset) {
				return l
			}
		}
		return ""
	}
	without := status(pools)
	if l := line(without, "kubelet-worker"); strings.Contains(l, "CONFLICT") {
		t.Fatalf("no other KubeletConfig, yet: %s", l)
	}
	if l := line(without, "psi-enable "); !strings.Contains(l, "virt") {
		t.Errorf("the custom pool that takes worker's MachineConfigs rolls with it: %s\n%s", l, without)
	}
	with := status(pools + admin)
	if l := line(with, "kubelet-worker"); !strings.Contains(l, "CONFLICT") || !strings.Contains(with, "admin-max-pods") {
		t.Errorf("an admin's KubeletConfig on the worker pool: %s\n%s", l, with)
	}
	// An earlier release's per-feature KubeletConfig on the worker pool,
	// provably the autopilot's: its settings go with kubelet-worker's
	// write (a carried tombstone), so the preview, like the controller,
	// plans without it: no Conflict. Without the autopilot's apply entry
	// it is someone else's, and stays one.
	v1 := `---
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: kubevirt-worker-cpu-manager
  labels: {platform.kubevirt.io/managed-by: virt-platform-autopilot}
  managedFields: [{manager: virt-platform-autopilot, operation: Apply, apiVersion: machineconfiguration.openshift.io/v1}]
spec:
  machineConfigPoolSelector: {matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}}
  kubeletConfig: {cpuManagerPolicy: static}
`
	if l := line(status(pools+v1), "kubelet-worker"); strings.Contains(l, "CONFLICT") || strings.Contains(l, "cpu-manager") {
		t.Errorf("an earlier release's KubeletConfig its write carries: %s", l)
	}
	if l := line(status(pools+strings.Replace(v1, "operation: Apply", "operation: Update", 1)), "kubelet-worker"); !strings.Contains(l, "CONFLICT") {
		t.Errorf("a KubeletConfig not provably the autopilot's: %s", l)
	}
	// MCO's kubelet.service for workers with the drop-in folder (4.21+):
	// the drop-in, beside the admin's KubeletConfig, leaving maxPods to it.
	unit := `---
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 01-worker-kubelet}
spec:
  config:
    systemd:
      units:
        - name: kubelet.service
          contents: "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf --config-dir=/etc/openshift/kubelet.conf.d\n"
`
	dropIn := status(pools + admin + unit)
	if l := line(dropIn, "kubelet-dropin-worker"); !strings.Contains(l, "90-worker-kubevirt-kubelet") || strings.Contains(l, "CONFLICT") || !strings.Contains(l, "virt") {
		t.Errorf("the worker kubelet reads drop-ins: %s\n%s", l, dropIn)
	}
	js := run(t, 0, "--hco-file", hco, "--objects-file", write(t, dir, "objects.yaml", pools+admin+unit), "--output", "features")
	if !strings.Contains(js, "kubelet-dropin-worker leaves to their owners: kubelet maxPods (KubeletConfig.machineconfiguration.openshift.io/admin-max-pods)") {
		t.Errorf("maxPods is not reported as left to the admin's KubeletConfig:\n%s", js)
	}
}
