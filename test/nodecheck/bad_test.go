package nodecheck

// Every check above can fail: each is fed a known-bad object here and
// must reject it, naming the defect.

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func mustMC(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func dataURL(s string) string {
	return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(s))
}

func wantFinding(t *testing.T, what string, got []string, substr string) {
	t.Helper()
	for _, g := range got {
		if strings.Contains(g, substr) {
			return
		}
	}
	t.Errorf("%s: no finding containing %q in %q", what, substr, got)
}

func TestBadIgnition(t *testing.T) {
	for _, spec := range ignitionSpecs() {
		raw := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","mode":420,"contnets":{}}]},` +
			`"systemd":{"units":[{"name":"x.servic","contents":"[Unit]\n"}]}}`
		_, errs := parseIgnition([]byte(raw), spec)
		wantFinding(t, "misspelled key "+spec, errs, "contnets")
		wantFinding(t, "unit extension "+spec, errs, "invalid systemd unit extension")
		_, errs = parseIgnition([]byte(`{"ignition":{"version":"3.6.0"}}`), "3.4")
		wantFinding(t, "spec above the release's", errs, "unsupported config version")
	}
}

func TestBadMCORules(t *testing.T) {
	mc := mustMC(t, `
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: bad}
spec:
  kernelType: rt
  fips: true
  extensions: [wireshark]
  kernelArguments: ["a=b c"]
  config:
    ignition: {version: 3.4.0}
    passwd: {users: [{name: admin}]}
    storage:
      directories: [{path: /etc/d}]
      files:
        - {path: /usr/local/bin/x, mode: 2541, contents: {source: "https://example.com/x"}}
        - {path: /etc/y, append: [{source: "data:,a"}]}
        - {path: /run/machine-config-daemon-force, contents: {source: "data:,"}}
`)
	got := mcoRulesCheck(mc)
	for _, want := range []string{"no machineconfiguration.openshift.io/role label", "kernelType=rt", "FIPS", "invalid extensions", "is not one argument",
		"non-core user", "directories section", "cannot exceed 0777", "not a data: URL", "includes append", "has no contents.source", "machine-config-daemon-force"} {
		wantFinding(t, "MCO rules", got, want)
	}
}

func TestBadPoolMerge(t *testing.T) {
	mc := func(name, karg, file string) *nodeObject {
		o := &nodeObject{Kind: "MachineConfig", Name: name, Obj: mustMC(t, `
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: `+name+`, labels: {machineconfiguration.openshift.io/role: worker}}
spec:
  kernelArguments: [`+karg+`]
  config: {ignition: {version: 3.4.0}, storage: {files: [`+file+`]}}
`)}
		o.JSON, _ = json.Marshal(o.Obj.Object)
		return o
	}
	p := &poolSet{Pool: "worker", Objects: []*nodeObject{
		mc("50-a", "transparent_hugepage=never", `{path: /etc/a, mode: 420}`),
		mc("90-b", "transparent_hugepage=madvise", `{path: /etc/b, mode: 420, contents: {source: "data:,b"}}`),
	}}
	for _, spec := range ignitionSpecs() {
		_, errs := renderPool(p, spec)
		wantFinding(t, "kernel arguments "+spec, errs, "transparent_hugepage is set")
		// MCO makes an unset overwrite true; without a source Ignition refuses it.
		wantFinding(t, "overwrite without source "+spec, errs, "overwrite must be false if source is unspecified")
	}
}

func TestBadUnit(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "Debian package systemd")
	unit := "[Unit]\nDescription=bad\n\n[Service]\nType=oneshot\nRestart=sometimes\nExecStart=/usr/local/bin/not-written\nExecStartPre=/usr/sbin/swapon -a\nBogus=1\n\n[Install]\nWantedBy=multi-user.target\n"
	dropin := "[Service]\nMemorySwapMax=lots\n"
	cfg := t35.Config{Systemd: t35.Systemd{Units: []t35.Unit{
		{Name: "bad.service", Contents: &unit},
		{Name: "system.slice", Dropins: []t35.Dropin{{Name: "10-bad.conf", Contents: &dropin}}},
	}}}
	root := t.TempDir()
	units, err := writeNodeRoot(root, cfg, releases[len(releases)-1], "worker")
	if err != nil {
		t.Fatal(err)
	}
	got := systemdVerify(analyze, root, units)
	for _, want := range []string{"Unknown key 'Bogus'", "restart specifier", "/usr/local/bin/not-written is not executable", "[Service]"} {
		wantFinding(t, "systemd-analyze verify", got, want)
	}
}

func TestBadPayloads(t *testing.T) {
	needTool(t, "systemd-analyze", "Debian package systemd")
	mode := 0o755
	file := func(path, body string) t35.File {
		src := dataURL(body)
		return t35.File{Node: t35.Node{Path: path}, FileEmbedded1: t35.FileEmbedded1{Mode: &mode, Contents: t35.Resource{Source: &src}}}
	}
	unit := "[Service]\nExecStart=/usr/sbin/sysctl -p /etc/x/tuning.conf\n"
	cfg := t35.Config{Systemd: t35.Systemd{Units: []t35.Unit{{Name: "x.service", Contents: &unit}}}}
	cases := []struct {
		f    t35.File
		want []string
	}{
		{file("/usr/local/bin/syntax", "#!/bin/bash\nif true; then\n  echo x\n"), []string{"bash:"}},
		{file("/usr/local/bin/lint", "#!/bin/bash\nf=$1\nrm $f\n"), []string{"SC2086"}},
		{file("/usr/local/bin/py", "#!/usr/bin/python3\ndef f(:\n"), []string{"python3:"}},
		{file("/etc/x/tuning.conf", "vm.no_such_knob = 1\nvm.swappiness\n"), []string{"no setting vm.no_such_knob", "not key = value"}},
		{file("/etc/systemd/logind.conf.d/x.conf", "[Login]\nInhibitDelayMaxSecs=900\n[Logn]\n"), []string{"no key InhibitDelayMaxSecs", "no section [Logn]"}},
		{file("/etc/unknown/file", "x"), []string{"no check knows"}},
	}
	for _, c := range cases {
		got := checkPayload(t, cfg, c.f)
		for _, w := range c.want {
			wantFinding(t, c.f.Path, got, w)
		}
	}
}

// badKubelet runs the tool on cases that MCO or the kubelet refuse.
func TestBadKubelet(t *testing.T) {
	bin := kubeletCheck(t)
	rel := func(name string) release {
		for _, r := range releases {
			if r.name == name {
				return r
			}
		}
		t.Fatalf("no release %s", name)
		return release{}
	}
	mk := func(r release, kc string, node nodeModel, dropIns map[string]string) kubeletCase {
		c := kubeletCase{Template: r.kubeletTemplate("worker"), MCO: r.mcoRules("worker"),
			Sizing:       sizing{Enabled: r.nodeSizing("worker"), Memory: "1Gi", CPU: "500m", ES: "1Gi"},
			SizingDropIn: r.sizingDropIn(), ConfigDir: r.configDir("worker"), DropIns: dropIns, Node: node}
		if kc != "" {
			c.KubeletConfig = json.RawMessage(kc)
		}
		return c
	}
	node := nodeModel{CPUs: 16, NUMANodes: 2, MemoryBytes: 64 << 30}
	swapNode := node
	swapNode.Swap = true
	static := `{"kubeletConfig":{"cpuManagerPolicy":"static","reservedSystemCPUs":"0-1","memoryManagerPolicy":"Static","kubeReserved":{"memory":"1Gi"},"systemReserved":{"memory":"1Gi"},"reservedMemory":[{"numaNode":0,"limits":{"memory":"2Gi"}}]}}`
	cases := []struct {
		c    kubeletCase
		want string
	}{
		{mk(rel("5.0"), static, node, nil), `the total amount "2Gi" of type "memory" is not equal`},
		{mk(rel("5.0"), `{"kubeletConfig":{"cpuManagerPolicy":"static","reservedSystemCPUs":"0-63"}}`, node, nil), "not a subset of online-cpus"},
		{mk(rel("5.0"), `{"kubeletConfig":{"topologyManagerPolicy":"numa-please"}}`, node, nil), "topologyManagerPolicy"},
		{mk(rel("5.0"), `{"kubeletConfig":{"evictionHard":{"memory.available":"lots"}}}`, node, nil), "evictionHard"},
		{mk(rel("5.0"), `{"kubeletConfig":{"maxPodz":500}}`, node, nil), `unknown field "maxPodz"`},
		{mk(rel("4.22"), `{"kubeletConfig":{"failSwapOn":false}}`, node, nil), "failSwapOn is not allowed"},
		{mk(rel("5.0"), `{"autoSizingReserved":true,"kubeletConfig":{"systemReserved":{"memory":"2Gi"}}}`, node, nil), "autoSizingReserved and systemdReserved"},
		{mk(rel("4.16"), "", swapNode, nil), "running with swap on is not supported"},
		{mk(rel("5.0"), "", node, map[string]string{"90-x.conf": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmemorySwap:\n  swapBehavior: Sometimes\n"}), "swapBehavior"},
		{mk(rel("5.0"), "", node, map[string]string{"90-x.conf": "failSwapOn: false\n"}), "Kind' is missing"},
	}
	var in strings.Builder
	enc := json.NewEncoder(&in)
	for i := range cases {
		cases[i].c.ID = cases[i].want
		if err := enc.Encode(cases[i].c); err != nil {
			t.Fatal(err)
		}
	}
	got := runTool(t, bin, in.String())
	for _, c := range cases {
		r := got[c.want]
		wantFinding(t, "kubelet-check", append(r.Errors, r.Warnings...), c.want)
	}
}

func TestBadProtection(t *testing.T) {
	base := `{"systemReserved":{"memory":"1Gi","cpu":"500m"},"evictionHard":{"memory.available":"100Mi","nodefs.available":"10%"},"evictionSoft":{"memory.available":"500Mi"},"evictionSoftGracePeriod":{"memory.available":"1m"},"enforceNodeAllocatable":["pods","system-reserved"],"maxPods":250,"podPidsLimit":4096,"containerLogMaxSize":"50Mi","protectKernelDefaults":true}`
	ours := `{"systemReserved":{"memory":"512Mi"},"evictionHard":{"memory.available":"50Mi","nodefs.available":"5Gi"},"evictionSoftGracePeriod":{"memory.available":"5m"},"enforceNodeAllocatable":["pods"],"maxPods":500,"podPidsLimit":-1,"containerLogMaxSize":"1Gi"}`
	got, err := weakenings(json.RawMessage(base), json.RawMessage(ours))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"systemReserved.memory: 1Gi lowered", "systemReserved.cpu: 500m dropped", "evictionHard.memory.available: 100Mi lowered",
		"evictionHard.nodefs.available: 10% replaced by 5Gi", "evictionSoft.memory.available: 500Mi dropped", "evictionSoftGracePeriod.memory.available: 1m lengthened",
		"enforceNodeAllocatable[system-reserved]", "maxPods: 250 raised", "podPidsLimit: 4096 raised to -1", "containerLogMaxSize", "protectKernelDefaults"} {
		wantFinding(t, "weakenings", got, want)
	}
	if same, _ := weakenings(json.RawMessage(base), json.RawMessage(base)); len(same) != 0 {
		t.Errorf("a configuration weakens itself: %v", same)
	}
}

// TestSwapModel: the swap unit's ExecCondition really runs against each
// release's kubelet.service, so a node before 4.21 keeps swap off.
func TestSwapModel(t *testing.T) {
	unit := "[Unit]\nConditionPathExists=/dev/disk/by-partlabel/OCPSWAP\n[Service]\nExecCondition=/usr/bin/grep -qFe --config-dir=/etc/openshift/kubelet.conf.d /etc/systemd/system/kubelet.service\nExecStart=/usr/sbin/swapon /dev/disk/by-partlabel/OCPSWAP\n"
	on := true
	cfg := t35.Config{Systemd: t35.Systemd{Units: []t35.Unit{{Name: "s.service", Enabled: &on, Contents: &unit}}}}
	for _, r := range releases {
		got, err := swapTurnsOn(t, cfg, r, &poolSet{Pool: "worker", Swap: true})
		if err != nil {
			t.Fatal(err)
		}
		if want := r.configDir("worker"); got != want {
			t.Errorf("OCP %s: swap on = %t, want %t", r.name, got, want)
		}
	}
	if got, _ := swapTurnsOn(t, cfg, releases[len(releases)-1], &poolSet{Pool: "worker"}); got {
		t.Error("swap on without the partition")
	}
}
