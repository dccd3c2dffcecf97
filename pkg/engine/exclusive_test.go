package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func kubeletConfig(name string, selector map[string]any, ours bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(rendercontext.KubeletConfigGVK)
	u.SetName(name)
	if selector != nil {
		u.Object["spec"].(map[string]any)["machineConfigPoolSelector"] = selector
	}
	if ours {
		u.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
	}
	return u
}

func kubeletPeers(kcs []*unstructured.Unstructured) map[schema.GroupVersionKind][]*unstructured.Unstructured {
	return map[schema.GroupVersionKind][]*unstructured.Unstructured{rendercontext.KubeletConfigGVK: kcs}
}

var (
	exclusivePool  = &catalog.Asset{Name: "kubelet-worker", Exclusive: catalog.ExclusivePool}
	exclusiveNodes = &catalog.Asset{Name: "node-health-check", Exclusive: catalog.ExclusiveNodes}
)

func TestKubeletClash(t *testing.T) {
	worker := map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
	master := map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/master": ""}}
	ours := kubeletConfig("kubevirt-kubelet-worker", worker, true)
	for name, c := range map[string]struct {
		others []*unstructured.Unstructured
		clash  string
	}{
		"alone":                                   {nil, ""},
		"our own live copy":                       {[]*unstructured.Unstructured{kubeletConfig("kubevirt-kubelet-worker", worker, true)}, ""},
		"another pool":                            {[]*unstructured.Unstructured{kubeletConfig("admin-master", master, false)}, ""},
		"no selector selects nothing":             {[]*unstructured.Unstructured{kubeletConfig("admin-none", nil, false)}, ""},
		"an admin's on the pool":                  {[]*unstructured.Unstructured{kubeletConfig("admin-worker", worker, false)}, "KubeletConfig admin-worker already selects pool worker"},
		"an old one of ours, kept":                {[]*unstructured.Unstructured{kubeletConfig("kubevirt-worker-performance", worker, true)}, "kubevirt-worker-performance"},
		"an empty selector selects nothing (MCO)": {[]*unstructured.Unstructured{kubeletConfig("admin-all", map[string]any{}, false)}, ""},
		"by expression": {[]*unstructured.Unstructured{kubeletConfig("admin-expr", map[string]any{"matchExpressions": []any{
			map[string]any{"key": "pools.operator.machineconfiguration.openshift.io/worker", "operator": "Exists"}}}, false)}, "admin-expr"},
	} {
		rc := &rendercontext.RenderContext{Observed: rendercontext.Observed{Peers: kubeletPeers(c.others)}}
		got, err := Clash(exclusivePool, ours, rc)
		if err != nil {
			t.Fatal(err)
		}
		if (c.clash == "") != (got == "") || !strings.Contains(got, c.clash) {
			t.Errorf("%s: got %q, want %q", name, got, c.clash)
		}
		if got != "" && !strings.Contains(got, "disabled-resources") {
			t.Errorf("%s: the message says what to do: %q", name, got)
		}
	}
}

// The usual recipe selects a label the admin put on the pool: matched
// against the live pool's labels, as MCO does.
func TestKubeletClashByPoolLabel(t *testing.T) {
	ours := kubeletConfig("kubevirt-kubelet-worker", map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}, true)
	admin := kubeletConfig("set-max-pods", map[string]any{"matchLabels": map[string]any{"custom-kubelet": "large-pods"}}, false)
	pool := &unstructured.Unstructured{Object: map[string]any{}}
	pool.SetGroupVersionKind(rendercontext.PoolGVK)
	pool.SetName("worker")
	pool.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": "", "custom-kubelet": "large-pods"})
	if got, _ := Clash(exclusivePool, ours, &rendercontext.RenderContext{Observed: rendercontext.Observed{Peers: kubeletPeers([]*unstructured.Unstructured{admin}), Pools: []*unstructured.Unstructured{pool}}}); !strings.Contains(got, "set-max-pods") {
		t.Errorf("a selector on the pool's own label clashes: %q", got)
	}
	if _, err := Clash(exclusivePool, ours, &rendercontext.RenderContext{Observed: rendercontext.Observed{PeersErr: map[schema.GroupVersionKind]error{rendercontext.KubeletConfigGVK: errors.New("forbidden")}}}); err == nil {
		t.Error("KubeletConfigs that cannot be read are an error, never \"no clash\"")
	}
}

// The clash is judged on what would be applied, over the pools the live
// objects' selectors reach, whatever the selectors' form.
func TestClashJudgedOnTheAppliedObject(t *testing.T) {
	pool := func(name string, extra ...string) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{}}
		p.SetGroupVersionKind(rendercontext.PoolGVK)
		p.SetName(name)
		l := map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""}
		for _, e := range extra {
			l[e] = ""
		}
		p.SetLabels(l)
		return p
	}
	sel := func(keys ...string) map[string]any {
		m := map[string]any{}
		for _, k := range keys {
			m[k] = ""
		}
		return map[string]any{"matchLabels": m}
	}
	pools := []*unstructured.Unstructured{pool("master"), pool("worker"), pool("infra", "custom")}
	adminOnMaster := kubeletConfig("admin-master", sel("pools.operator.machineconfiguration.openshift.io/master"), false)
	adminOnInfra := kubeletConfig("admin-infra", sel("custom"), false)
	for name, c := range map[string]struct {
		ours  map[string]any
		clash string
	}{
		"ours on worker":                             {sel("pools.operator.machineconfiguration.openshift.io/worker"), ""},
		"patched onto master":                        {sel("pools.operator.machineconfiguration.openshift.io/master"), "admin-master already selects pool master"},
		"patched to an empty selector (no pool)":     {map[string]any{}, ""},
		"patched onto the custom pool's own label":   {sel("custom"), "admin-infra"},
		"patched to a selector that selects no pool": {sel("nothing"), ""},
	} {
		ours := kubeletConfig("kubevirt-kubelet-worker", c.ours, true)
		rc := &rendercontext.RenderContext{Observed: rendercontext.Observed{Peers: kubeletPeers([]*unstructured.Unstructured{adminOnMaster, adminOnInfra}), Pools: pools}}
		got, err := Clash(exclusivePool, ours, rc)
		if err != nil || (c.clash == "") != (got == "") || !strings.Contains(got, c.clash) {
			t.Errorf("%s: got %q (%v), want %q", name, got, err, c.clash)
		}
	}
	if got, _ := Clash(&catalog.Asset{Name: "not-exclusive"}, kubeletConfig("x", map[string]any{}, true), &rendercontext.RenderContext{Observed: rendercontext.Observed{Peers: kubeletPeers([]*unstructured.Unstructured{adminOnMaster})}}); got != "" {
		t.Errorf("an asset not declared exclusive never clashes: %q", got)
	}
}

func nodeHealthCheck(name string, selector map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(rendercontext.NodeHealthCheckGVK)
	u.SetName(name)
	if selector != nil {
		u.Object["spec"].(map[string]any)["selector"] = selector
	}
	return u
}

// NodeHealthChecks clash on the nodes both select, as NHC reads its
// selector (empty or absent: every node), over generated node sets: the
// verdict is the oracle's, computed from the nodes' roles directly.
func TestNodeHealthCheckClash(t *testing.T) {
	workers := map[string]any{"matchExpressions": []any{
		map[string]any{"key": "node-role.kubernetes.io/worker", "operator": "Exists"},
		map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"},
	}}
	ours := nodeHealthCheck("kubevirt-workers", workers)
	byRole := func(role string) map[string]any {
		return map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/" + role: ""}}
	}
	roles := [][]string{{"worker"}, {"master", "control-plane"}, {"master", "control-plane", "worker"}, {"worker", "infra"}, {"infra"}}
	for seed := range 64 {
		// Each bit picks whether a node of that role mix exists.
		var nodes []corev1.Node
		has := map[string]bool{} // "worker not control-plane", "infra", ...
		for i, r := range roles {
			if seed&(1<<i) == 0 {
				continue
			}
			l := map[string]string{}
			for _, role := range r {
				l["node-role.kubernetes.io/"+role] = ""
			}
			nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: strings.Join(r, "-"), Labels: l}})
			for _, role := range r {
				has[role] = true
			}
			if slices.Contains(r, "worker") && !slices.Contains(r, "control-plane") {
				has["our-worker"] = true
				if slices.Contains(r, "infra") {
					has["our-infra"] = true
				}
			}
		}
		rc := rendercontext.New(rendercontext.Facts{Nodes: nodes})
		for name, c := range map[string]struct {
			other *unstructured.Unstructured
			clash bool
		}{
			"masters only":       {nodeHealthCheck("admin-masters", byRole("master")), false},
			"every worker":       {nodeHealthCheck("admin-workers", byRole("worker")), has["our-worker"]},
			"infra nodes":        {nodeHealthCheck("admin-infra", byRole("infra")), has["our-infra"]},
			"empty selects all":  {nodeHealthCheck("admin-all", map[string]any{}), has["our-worker"]},
			"absent selects all": {nodeHealthCheck("admin-absent", nil), has["our-worker"]},
			"our own live copy":  {nodeHealthCheck("kubevirt-workers", byRole("worker")), false},
		} {
			rc.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{rendercontext.NodeHealthCheckGVK: {c.other}}
			got, err := Clash(exclusiveNodes, ours, rc)
			if err != nil {
				t.Fatalf("seed %d, %s: %v", seed, name, err)
			}
			if (got != "") != c.clash {
				t.Errorf("seed %d (nodes %v), %s: got %q, want clash %v", seed, has, name, got, c.clash)
			}
			if got != "" && (!strings.Contains(got, c.other.GetName()) || !strings.Contains(got, "disabled-resources")) {
				t.Errorf("seed %d, %s: the message names the other check and what to do: %q", seed, name, got)
			}
		}
	}
}

// A check on a label the node cache does not keep, or that cannot be
// read, is unknown: an error, never "no clash".
func TestNodeHealthCheckClashUnknown(t *testing.T) {
	rc := rendercontext.New(rendercontext.Facts{Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}}})
	ours := nodeHealthCheck("kubevirt-workers", map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/worker": ""}})
	rc.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{rendercontext.NodeHealthCheckGVK: {
		nodeHealthCheck("by-rack", map[string]any{"matchLabels": map[string]any{"topology.example.com/rack": "r1"}})}}
	if _, err := Clash(exclusiveNodes, ours, rc); err == nil || !strings.Contains(err.Error(), "topology.example.com/rack") {
		t.Errorf("a selector on a label the autopilot does not read is unknown: %v", err)
	}
	rc.Peers, rc.PeersErr = nil, map[schema.GroupVersionKind]error{rendercontext.NodeHealthCheckGVK: errors.New("forbidden")}
	if _, err := Clash(exclusiveNodes, ours, rc); err == nil {
		t.Error("NodeHealthChecks that cannot be read are an error, never \"no clash\"")
	}
}
