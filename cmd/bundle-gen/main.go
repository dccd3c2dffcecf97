// Command bundle-gen writes the OLM bundle (registry+v1) under bundle/
// from the same sources as config/: the Deployment, the generated
// ClusterRole, the namespaced roles, the Service and the monitoring
// objects. Nothing is written twice; 'make verify' fails when bundle/ is
// stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/consoleapi"
)

const (
	name      = "virt-platform-autopilot"
	namespace = "virt-platform-autopilot-system"
	// defaultImage is the published image the checked-in bundle installs
	// (config/default's): a tag, so that bundle does not claim disconnected
	// support; a release passes -image by digest.
	defaultImage = "quay.io/kubevirt/virt-platform-autopilot:latest"
	// channel is the one channel the bundle is published in (OLM's
	// channel naming: candidate while the API of annotations may change).
	channel = "candidate"
)

// image is the image the CSV installs (-image).
var image = defaultImage

// byDigest reports whether ref names its image by digest: only then can a
// mirror for a disconnected cluster serve it (OpenShift's
// ImageContentSourcePolicy/ImageDigestMirrorSet mirror digests only).
func byDigest(ref string) bool { return strings.Contains(ref, "@sha256:") }

func main() {
	root := flag.String("root", ".", "the repository")
	version := flag.String("version", "0.1.0", "the bundle's semantic version")
	flag.StringVar(&image, "image", defaultImage, "the image the CSV installs; by digest (name@sha256:...) for a bundle that installs disconnected")
	flag.Parse()
	if err := run(*root, *version); err != nil {
		fmt.Fprintln(os.Stderr, "bundle-gen:", err)
		os.Exit(1)
	}
}

// docs reads a file of YAML documents as objects.
func docs(root, path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, d := range bytes.Split(raw, []byte("\n---")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

func convert(u *unstructured.Unstructured, into any) error {
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, into)
}

func run(root, ver string) error {
	deps, err := docs(root, "config/manager/deployment.yaml")
	if err != nil {
		return err
	}
	var dep appsv1.Deployment
	if err := convert(deps[0], &dep); err != nil {
		return err
	}
	for i := range dep.Spec.Template.Spec.Containers {
		if dep.Spec.Template.Spec.Containers[i].Image == name {
			dep.Spec.Template.Spec.Containers[i].Image = image
		}
	}
	roles, err := docs(root, "config/rbac/role.yaml")
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	if err := convert(roles[0], &role); err != nil {
		return err
	}
	// The namespaced roles (leader election, the fleet status) become the
	// CSV's permissions in the install namespace.
	var permissions []operatorsv1alpha1.StrategyDeploymentPermissions
	for _, f := range []string{"config/rbac/leader_election_role.yaml", "config/rbac/status_role.yaml"} {
		objs, err := docs(root, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "Role" {
				continue // OLM binds the rules to the ServiceAccount itself
			}
			var r rbacv1.Role
			if err := convert(o, &r); err != nil {
				return err
			}
			permissions = append(permissions, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: name, Rules: r.Rules})
		}
	}
	csv := operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{Name: name + ".v" + ver, Annotations: map[string]string{
			"capabilities":   "Seamless Upgrades",
			"categories":     "OpenShift Optional",
			"containerImage": image,
			"description":    "Turns OpenShift Virtualization into a managed platform: golden HCO settings, node tuning, descheduling, remediation and observability; node reboots go at once unless the HyperConverged sets a disruption window.",
			"repository":     "https://github.com/kubevirt/virt-platform-autopilot",
			"support":        "KubeVirt",
			"olm.skipRange":  "<" + ver,
			// No CR of its own: nothing for the console to create or delete.
			"alm-examples": "[]",
			"operatorframework.io/suggested-namespace": namespace,
			// The metrics endpoint is scraped by the platform Prometheus.
			"operatorframework.io/cluster-monitoring":        "true",
			"features.operators.openshift.io/disconnected":   strconv.FormatBool(byDigest(image)),
			"features.operators.openshift.io/tls-profiles":   "true",
			"features.operators.openshift.io/fips-compliant": "false",
			"features.operators.openshift.io/proxy-aware":    "false",
			"operatorframework.io/arch.amd64":                "supported",
			// The console offers to enable the plugin at install (the
			// ConsolePlugin object is in the bundle).
			"console.openshift.io/plugins":  `["` + consoleapi.PluginName + `"]`,
			"operatorframework.io/os.linux": "supported",
		}},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "Virt Platform Autopilot",
			Description: "The autopilot configures an OpenShift Virtualization cluster as a managed platform. It has no API of its own: " +
				"annotations on the HyperConverged resource drive it.\n\n" +
				"Installing it reboots nodes: many of its objects are MachineConfigs and KubeletConfigs, and a write of one makes the Machine Config Operator drain and reboot that pool, live-migrating its VMs. " +
				"With no disruption window such writes go at once, on install and on every correction. " +
				"The safe way in: annotate the HyperConverged platform.kubevirt.io/autopilot=false before installing, read 'render --output diff --activation=true', " +
				"set platform.kubevirt.io/disruption-window, then set platform.kubevirt.io/autopilot=true.\n\n" +
				"See the project's README and docs/deployment.md.",
			Version:        mustVersion(ver),
			Maturity:       channel,
			Provider:       operatorsv1alpha1.AppLink{Name: "KubeVirt"},
			Links:          []operatorsv1alpha1.AppLink{{Name: "Source", URL: "https://github.com/kubevirt/virt-platform-autopilot"}},
			Keywords:       []string{"virtualization", "kubevirt", "autopilot", "machineconfig"},
			Maintainers:    []operatorsv1alpha1.Maintainer{{Name: "KubeVirt", Email: "kubevirt-dev@googlegroups.com"}},
			MinKubeVersion: "1.30.0",
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs:    []operatorsv1alpha1.StrategyDeploymentSpec{{Name: dep.Name, Label: dep.Labels, Spec: dep.Spec}},
					ClusterPermissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: name, Rules: role.Rules}},
					Permissions:        permissions,
				},
			},
			RelatedImages: []operatorsv1alpha1.RelatedImage{{Name: name, Image: image}},
		},
	}
	manifests := filepath.Join(root, "bundle", "manifests")
	if err := os.RemoveAll(manifests); err != nil {
		return err
	}
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	header := "# Generated by cmd/bundle-gen from config/: run 'make generate'.\n"
	if err := write(filepath.Join(manifests, name+".clusterserviceversion.yaml"), header, csv); err != nil {
		return err
	}
	// The objects beside the CSV (kinds a registry+v1 bundle may carry):
	// the metrics Service, the scrape's RBAC and the ServiceMonitor, the
	// console plugin's Service and ConsolePlugin.
	for _, f := range []string{"config/manager/service.yaml", "config/rbac/metrics_reader_role.yaml", "config/prometheus/prometheus_rbac.yaml", "config/prometheus/servicemonitor.yaml",
		"config/console/service.yaml", "config/console/plugin/consoleplugin.yaml"} {
		objs, err := docs(root, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			file := strings.ToLower(o.GetName() + "_" + o.GetObjectKind().GroupVersionKind().GroupKind().String() + ".yaml")
			file = strings.ReplaceAll(file, ".", "_")
			file = strings.TrimSuffix(file, "_yaml") + ".yaml"
			if err := write(filepath.Join(manifests, file), header, o.Object); err != nil {
				return err
			}
		}
	}
	ann := map[string]any{"annotations": map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         name,
		"operators.operatorframework.io.bundle.channels.v1":        channel,
		"operators.operatorframework.io.bundle.channel.default.v1": channel,
	}}
	meta := filepath.Join(root, "bundle", "metadata")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return err
	}
	if err := write(filepath.Join(meta, "annotations.yaml"), header, ann); err != nil {
		return err
	}
	// The bundle image: the two folders and the annotations as labels.
	var df strings.Builder
	df.WriteString("# Generated by cmd/bundle-gen: run 'make generate'. Build from bundle/:\n#   podman build -f bundle/bundle.Dockerfile -t <registry>/virt-platform-autopilot-bundle:v" + ver + " bundle/\nFROM scratch\n")
	keys := make([]string, 0, len(ann["annotations"].(map[string]string)))
	for k := range ann["annotations"].(map[string]string) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&df, "LABEL %s=%s\n", k, ann["annotations"].(map[string]string)[k])
	}
	df.WriteString("COPY manifests /manifests/\nCOPY metadata /metadata/\n")
	return os.WriteFile(filepath.Join(root, "bundle", "bundle.Dockerfile"), []byte(df.String()), 0o644)
}

func write(path, header string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(header), b...), 0o644)
}

func mustVersion(v string) version.OperatorVersion {
	return version.OperatorVersion{Version: semver.MustParse(v)}
}
