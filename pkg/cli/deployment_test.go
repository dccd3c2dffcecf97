package cli

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
)

// render's default --autopilot-deployment and the container it reads the
// operand images from are where config/default deploys the autopilot.
func TestDefaultDeploymentIsTheShippedOne(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "default", "namespaced", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string `json:"namespace"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(filepath.Join("..", "..", "config", "manager", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if want := k.Namespace + "/" + d.Name; DefaultDeployment != want {
		t.Errorf("DefaultDeployment %q, config/default deploys %q", DefaultDeployment, want)
	}
	found := false
	for _, c := range d.Spec.Template.Spec.Containers {
		found = found || c.Name == gather.ManagerContainer
	}
	if !found {
		t.Errorf("no container %q in config/manager/deployment.yaml", gather.ManagerContainer)
	}
}
