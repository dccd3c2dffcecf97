package shipped

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// Digests the HCO pinned (kubevirt/hyperconverged-cluster-operator
// deploy/images.csv, AUTOPILOT_IMAGE row): v1.18.0/v1.18.1 ship v0.0.10,
// the onboarding commit bfb739d6 v0.0.4, release-1.18 366be1f6 v0.0.13.
const (
	digest0010 = "ba94138eb74ebf3508dd1f2722773d0f1091aa683947ff1a1a5690168fed6384"
	digest0004 = "cdb613f4ceddd10b58cce9bd38e0819291db916328e5a063ee701b7c27a0cedc"
	digest0013 = "c57fcd8ebd11d8646dd6932209b4809e6d7971bb4abebbb940851aa434672001"
)

// csvDeployment is the Deployment the HCO's CSV installs (HCO v1.18.1
// manifests: selector app + control-plane, container manager), with the
// image given.
func csvDeployment(image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": DeploymentName, "namespace": "openshift-cnv",
			"labels": map[string]any{"app": "virt-platform-autopilot", "app.kubernetes.io/version": "1.18.1"}},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "virt-platform-autopilot", "control-plane": "controller-manager"}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
				"name": "manager", "image": image, "args": []any{"--leader-elect", "--namespace=openshift-cnv"}}}}},
		},
	}}
}

func community(digest string) *unstructured.Unstructured {
	return csvDeployment("quay.io/openshift-virtualization/virt-platform-autopilot@sha256:" + digest)
}

// The table follows the shipped releases' reading of the switch
// (pkg/overrides/validation.go: IsAutopilotEnabled, exact "true", up to
// v0.0.6; ParseAutopilotScope, trimmed, from v0.0.7: empty idle, "true"
// all, anything else an allowlist, "false" idle from v0.0.11 and naming
// no asset before), read on the safe side: a list is taken to name one of
// its assets.
func TestJudge(t *testing.T) {
	ours := csvDeployment("quay.io/kubevirt/virt-platform-autopilot:latest")
	if err := unstructured.SetNestedStringMap(ours.Object, map[string]string{"app.kubernetes.io/name": "virt-platform-autopilot"}, "spec", "selector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	scaled := community(digest0010)
	if err := unstructured.SetNestedField(scaled.Object, int64(0), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	noReplicas := community(digest0010)
	unstructured.RemoveNestedField(noReplicas.Object, "spec", "replicas")

	cases := []struct {
		name   string
		deploy *unstructured.Unstructured
		err    error
		value  string
		set    bool
		want   State
	}{
		{"none", nil, nil, "true", true, Absent},
		{"this project's own Deployment of the same name", ours, nil, "true", true, Absent},
		{"unreadable", nil, errors.New("forbidden"), "", false, Unknown},
		{"v0.0.10, switch absent", community(digest0010), nil, "", false, Idle},
		{"v0.0.10, switch empty", community(digest0010), nil, "  ", true, Idle},
		{"v0.0.10, false", community(digest0010), nil, "false", true, Idle},
		{"v0.0.10, true", community(digest0010), nil, "true", true, Acting},
		{"v0.0.10, true with spaces", community(digest0010), nil, " true ", true, Acting},
		{"v0.0.10, a list", community(digest0010), nil, "psi-enable,swap-enable", true, Acting},
		{"v0.0.10, report-only (an allowlist to it: held, the safe side)", community(digest0010), nil, "report-only", true, Acting},
		{"v0.0.10, replicas defaulted", noReplicas, nil, "true", true, Acting},
		{"v0.0.10 scaled to zero", scaled, nil, "true", true, Idle},
		{"v0.0.13, false", community(digest0013), nil, "false", true, Idle},
		{"v0.0.13, true", community(digest0013), nil, "true", true, Acting},
		{"v0.0.4, exact true", community(digest0004), nil, "true", true, Acting},
		{"v0.0.4, untrimmed true", community(digest0004), nil, " true", true, Idle},
		{"v0.0.4, a list", community(digest0004), nil, "psi-enable", true, Idle},
		{"unknown digest, switch absent", community(strings.Repeat("0", 64)), nil, "", false, Unknown},
		{"unknown digest, true", community(strings.Repeat("0", 64)), nil, "true", true, Unknown},
		{"unknown digest, false", community(strings.Repeat("0", 64)), nil, "false", true, Idle},
		{"image by tag", csvDeployment("registry.redhat.io/container-native-virtualization/virt-platform-autopilot:v4.22"), nil, "", false, Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.deploy, c.err, "openshift-cnv", c.value, c.set)
			if v.State != c.want {
				t.Fatalf("state %s, want %s (%s)", v.State, c.want, v.Reason)
			}
			if v.Holds() != (c.want == Acting || c.want == Unknown) {
				t.Fatalf("holds %v in state %s", v.Holds(), v.State)
			}
			if v.Holds() && !strings.Contains(v.Reason, "openshift-cnv/"+DeploymentName) {
				t.Fatalf("the reason names no Deployment: %s", v.Reason)
			}
			if c.want == Acting && !strings.Contains(v.Reason, "oc annotate hyperconverged -n openshift-cnv kubevirt-hyperconverged "+annotations.Autopilot+"-") {
				t.Fatalf("an acting verdict gives no handover step: %s", v.Reason)
			}
		})
	}
}

// Every release listed has digests of a sha256's length, none twice.
func TestReleasesAreWellFormed(t *testing.T) {
	seen := map[string]string{}
	for _, r := range releases {
		if len(r.Digests) == 0 {
			t.Errorf("%s has no digest", r.Version)
		}
		for _, d := range r.Digests {
			if len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
				t.Errorf("%s: %q is not a sha256 digest", r.Version, d)
			}
			if other, ok := seen[d]; ok {
				t.Errorf("%s and %s share digest %s", r.Version, other, d)
			}
			seen[d] = r.Version
		}
	}
}

// The field set of an apply under this autopilot's name: the shipped
// one's never holds the asset stamp, this one's always does.
func TestWroteLast(t *testing.T) {
	obj := func(fields string, stamped bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
			"metadata": map[string]any{"name": "50-x"}, "spec": map[string]any{"kernelArguments": []any{"psi=1"}}}}
		ann := map[string]string{annotations.ManagedByLabel: "x"}
		if stamped {
			ann[annotations.Asset] = "psi-enable"
		}
		u.SetAnnotations(ann)
		if fields != "" {
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "machineconfiguration.openshift.io/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}})
		}
		return u
	}
	ourSet := `{"f:metadata":{"f:annotations":{"f:platform.kubevirt.io/asset":{}}},"f:spec":{"f:kernelArguments":{}}}`
	theirSet := `{"f:metadata":{"f:labels":{"f:platform.kubevirt.io/managed-by":{}}},"f:spec":{"f:kernelArguments":{}}}`
	for _, c := range []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"this autopilot's apply", obj(ourSet, true), false},
		{"another's apply under the same name, stamp left behind", obj(theirSet, true), true},
		{"another's apply under the same name, no stamp", obj(theirSet, false), true},
		{"no apply under the name", obj("", true), false},
		{"nothing", nil, false},
	} {
		if got := WroteLast(c.live); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		got := NameOpponents(c.live, []string{"kubectl-edit"})
		if c.want != (len(got) == 2 && got[1] == Opponent) {
			t.Errorf("%s: opponents %v", c.name, got)
		}
	}
}
