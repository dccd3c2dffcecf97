package cli

import (
	"bufio"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// hostedObjects is a guest cluster of a hosted control plane: its
// Infrastructure says the control plane is external (HyperShift sets
// controlPlaneTopology External).
const hostedObjects = `apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
status:
  controlPlaneTopology: External
  infrastructureTopology: HighlyAvailable
  platformStatus:
    type: KubeVirt
`

// On a hosted guest the node features say where their objects go (not a
// missing dependency), and --output nodepool writes them as HyperShift's
// NodePool takes them (hypershift-operator/controllers/nodepool/config.go:
// several documents under "config", MachineConfig and KubeletConfig only,
// workers only).
func TestHostedNodePool(t *testing.T) {
	dir := t.TempDir()
	hco := write(t, dir, "hco.yaml", featuresHCO)
	nodes := write(t, dir, "nodes.yaml", nodesYAML)
	objs := write(t, dir, "objects.yaml", hostedObjects)
	// The guest serves no MachineConfig or KubeletConfig: only other CRDs.
	crds := write(t, dir, "kd.yaml", descheduler417)
	base := []string{"--hco-file", hco, "--nodes-file", nodes, "--objects-file", objs, "--crds", crds}

	status, stderr, code := renderOut(append(base, "-o", "status")...)
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("status: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(status, "NODEPOOL") || strings.Contains(status, "machineconfiguration.openshift.io/v1/MachineConfig is not served") {
		t.Fatalf("node assets are not said to go to a NodePool:\n%s", status)
	}
	feats, _, _ := renderOut(append(base, "-o", "features")...)
	if !strings.Contains(feats, "hosted") {
		t.Fatalf("no node feature is hosted:\n%s", feats)
	}

	out, stderr, code := renderOut(append(base, "-o", "nodepool", "--nodepool-namespace", "clusters")...)
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("nodepool: exit %d\n%s", code, stderr)
	}
	var cm *unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufioReader(out))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal(doc, &u.Object) == nil && u.GetKind() == "ConfigMap" {
			cm = u
		}
	}
	if cm == nil || cm.GetNamespace() != "clusters" {
		t.Fatalf("no ConfigMap in clusters:\n%s", out)
	}
	config, _, _ := unstructured.NestedString(cm.Object, "data", "config")
	kinds := map[string]int{}
	docs := utilyaml.NewYAMLReader(bufioReader(config))
	for {
		doc, err := docs.Read()
		if err != nil {
			break
		}
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("a document HyperShift cannot read: %v\n%s", err, doc)
		}
		kinds[u.GetKind()]++
		switch u.GetKind() {
		case "MachineConfig":
			if u.GetLabels()["machineconfiguration.openshift.io/role"] != "worker" {
				t.Errorf("MachineConfig %s for role %q", u.GetName(), u.GetLabels()["machineconfiguration.openshift.io/role"])
			}
		case "KubeletConfig":
		default:
			t.Errorf("%s %s: a kind HyperShift refuses in a NodePool config", u.GetKind(), u.GetName())
		}
	}
	if kinds["MachineConfig"] == 0 {
		t.Fatalf("no MachineConfig in the NodePool config:\n%s", config)
	}
	if !strings.Contains(out, "patch nodepool") {
		t.Errorf("the NodePool reference is not shown:\n%s", out)
	}
	// Every master MachineConfig the status sends to a NodePool is named as
	// left out (a NodePool's nodes are workers).
	for _, l := range strings.Split(status, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "NODEPOOL" && strings.HasPrefix(f[2], "MachineConfig/") && strings.Contains(f[2], "-master-") {
			if !strings.Contains(stderr, "left out: "+f[2]) {
				t.Errorf("%s not named as left out:\n%s", f[2], stderr)
			}
		}
	}
	// Not hosted: the same cluster with its own control plane applies
	// MachineConfigs itself (AssumeAllKinds: every kind served).
	plain, _, _ := renderOut("--hco-file", hco, "--nodes-file", nodes, "-o", "status")
	if strings.Contains(plain, "NODEPOOL") {
		t.Fatalf("a cluster with its own control plane is read as hosted:\n%s", plain)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
