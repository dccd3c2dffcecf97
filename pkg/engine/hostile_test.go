package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// hostileValues: each would change a YAML document's structure, a JSON
// document or a kernel command line if a template emitted it as it is.
var hostileValues = func() []string {
	vs := []string{
		"a b", " lead", "trail\t", "a\nb", "a\n---\nkind: Secret", "key: value", "a #comment", "{a: b}", "[a, b]",
		`a"b`, "a'b", `a\b`, "---", "*alias", "&anchor x", "!!binary x", `{"a":[1]}`, "a,b=c d",
		"", "\x00", "\xff\xfe\xfd", strings.Repeat("x", 10<<10),
	}
	// A line that would be a sibling or child key at any indentation.
	for indent := 0; indent <= 12; indent += 2 {
		vs = append(vs, "a\n"+strings.Repeat(" ", indent)+"injected: x")
	}
	return vs
}()

// hostileFacts are what one render context is built from; an input
// replaces one value in them.
type hostileFacts struct {
	hco      *unstructured.Unstructured
	nodes    []corev1.Node
	infra    *unstructured.Unstructured
	crds     []apiextensionsv1.CustomResourceDefinition
	observed rendercontext.Observed
	live     liveMap
	// crdEnum is the extra KubeDescheduler profile its CRD lists.
	crdEnum string
}

// hostileInput is one value a template reads from the cluster (or from
// the operator's environment).
type hostileInput struct {
	name string
	// benign is an ordinary value, handled the way a hostile one has to be
	// (emitted as data, or not recognized), so structures compare.
	benign any
	// reads are assets that must render with the benign value (so the
	// input is exercised).
	reads []string
	set   func(f *hostileFacts, v any)
	// key: the value is a map key in the output, a path segment.
	key bool
	// annotation: the input is this HCO annotation, so a value refused is
	// reported as the annotation's (Invalid), not as a failure.
	annotation string
	// isSwitch: a feature switch, which fails even a naming render when
	// not understood (the engine names such assets with NamingOnly).
	isSwitch bool
	// emptyIsAbsent: "" is how this input is absent (an unset image, no
	// default class), so it is no hostile value here.
	emptyIsAbsent bool
}

func hostileObj(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func hostileLiveKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// hostileBase: every feature switched on, every input present with an
// ordinary value, so every asset renders as far as it can.
func hostileBase(cat *catalog.Catalog) *hostileFacts {
	ann := map[string]string{}
	for _, f := range cat.Features {
		if f.Switch != "" {
			ann[f.SwitchAnnotation()] = "true"
		}
	}
	hco := hostileObj("hco.kubevirt.io/v1", "HyperConverged", "openshift-cnv", "kubevirt-hyperconverged", map[string]any{
		"spec": map[string]any{
			"featureGates": []any{map[string]any{"name": "CPUManager"}},
			"virtualization": map[string]any{
				"permittedHostDevices": map[string]any{"pciHostDevices": []any{
					map[string]any{"pciDeviceSelector": "10DE:1EB8", "resourceName": "nvidia.com/T4"},
					map[string]any{"pciDeviceSelector": "8086:0D4C", "resourceName": "intel.com/nic"},
				}},
				"liveMigrationConfig": map[string]any{"parallelMigrationsPerCluster": int64(5), "parallelOutboundMigrationsPerNode": int64(2)},
			},
			"deployment": map[string]any{"nodePlacements": map[string]any{"workload": map[string]any{
				"nodeSelector": map[string]any{"example.com/vm": "true"},
				"tolerations":  []any{map[string]any{"key": "example.com/vm", "operator": "Equal", "value": "true", "effect": "NoSchedule"}},
				"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
						map[string]any{"key": "example.com/vm", "operator": "In", "values": []any{"true"}},
					}}},
				}}},
			}}},
		},
	})
	hco.SetAnnotations(ann)
	labels := func(roles ...string) map[string]string {
		l := map[string]string{
			"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/iommu-enabled": "true",
			"feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/usb-ef_0b95.present": "true",
			"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
		}
		for _, r := range roles {
			l["node-role.kubernetes.io/"+r] = ""
		}
		return l
	}
	profile := hostileObj("cdi.kubevirt.io/v1beta1", "StorageProfile", "", "nfs-csi", map[string]any{"status": map[string]any{
		"storageClass":      "nfs-csi",
		"claimPropertySets": []any{map[string]any{"accessModes": []any{"ReadWriteMany"}, "volumeMode": "Filesystem"}},
	}})
	class := hostileObj("storage.k8s.io/v1", "StorageClass", "", "standard", map[string]any{})
	class.SetAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
	objects := map[rendercontext.ObjectKey]*unstructured.Unstructured{}
	for _, k := range rendercontext.Reads(cat) {
		objects[k] = nil
	}
	for _, u := range []*unstructured.Unstructured{
		hostileObj("monitoring.coreos.com/v1", "PrometheusRule", "openshift-kube-descheduler-operator", "descheduler-rules", map[string]any{
			"spec": map[string]any{"groups": []any{map[string]any{"rules": []any{
				map[string]any{"record": "descheduler:combined_utilization_and_pressure:avg1m"},
				map[string]any{"record": "descheduler:other:avg1m"},
			}}}},
		}),
		hostileObj("fence-agents-remediation.medik8s.io/v1alpha1", "FenceAgentsRemediationTemplate", "openshift-workload-availability", "fenceagentsremediationtemplate-default", map[string]any{
			"status": map[string]any{"conditions": []any{
				map[string]any{"type": "FenceAgentStatusValidationSucceeded", "status": "True"},
				map[string]any{"type": "Other", "status": "False"},
			}},
		}),
	} {
		k := rendercontext.ObjectKey{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if _, declared := objects[k]; !declared {
			panic("not declared under reads: " + k.String())
		}
		objects[k] = u
	}
	live := liveMap{}
	for _, u := range []*unstructured.Unstructured{
		hostileObj("loki.grafana.com/v1", "LokiStack", "openshift-logging", "logging-loki", map[string]any{"spec": map[string]any{
			"size":             "1x.small",
			"storageClassName": "gp3-csi",
			"storage": map[string]any{
				"schemas": []any{map[string]any{"version": "v13", "effectiveDate": "2024-10-01"}},
				"secret":  map[string]any{"name": "logging-loki-s3", "type": "s3"},
			},
			"limits": map[string]any{"global": map[string]any{"retention": map[string]any{"days": int64(7)}}},
		}}),
		hostileObj("operator.openshift.io/v1", "KubeDescheduler", "openshift-kube-descheduler-operator", "cluster", map[string]any{"spec": map[string]any{
			"profiles": []any{"AffinityAndTaints", "LowNodeUtilization"},
		}}),
		hostileObj("storage-based-remediation.medik8s.io/v1alpha1", "StorageBasedRemediationConfig", "openshift-workload-availability", "kubevirt-detect-only", map[string]any{
			"spec": map[string]any{"sharedStorageClass": "nfs-csi"},
		}),
		hostileObj("v1", "ConfigMap", "openshift-monitoring", "cluster-monitoring-config", map[string]any{
			"data": map[string]any{"config.yaml": "prometheusK8s:\n  retention: 1d\n"},
		}),
	} {
		live[hostileLiveKey(u)] = u
	}
	return &hostileFacts{
		hco:   hco,
		nodes: []corev1.Node{goldenNode(labels("worker")), goldenNode(labels("master", "worker"))},
		infra: hostileObj("config.openshift.io/v1", "Infrastructure", "", "cluster", map[string]any{"status": map[string]any{
			"controlPlaneTopology": "HighlyAvailable", "platformStatus": map[string]any{"type": "BareMetal"},
		}}),
		observed: rendercontext.Observed{
			StorageProfiles: []*unstructured.Unstructured{profile},
			StorageClasses:  []*unstructured.Unstructured{class},
			Objects:         objects,
			Images:          map[string]string{"kubevirt-metrics-exporter": "quay.io/kubevirt/metrics-exporter:v1"},
		},
		live:    live,
		crdEnum: "SoftTopologyAndDuplicates",
	}
}

// context builds the render context; the KubeDescheduler CRD lists the
// KubeVirt profile, f.crdEnum and every optional field the template reads.
func (f *hostileFacts) context() *rendercontext.RenderContext {
	crd := deschedulerSchema(nil, true)
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	var enum []apiextensionsv1.JSON
	for _, p := range []string{"KubeVirtRelieveAndMigrate", f.crdEnum} {
		raw, _ := json.Marshal(p)
		enum = append(enum, apiextensionsv1.JSON{Raw: raw})
	}
	spec.Properties["profiles"] = apiextensionsv1.JSONSchemaProps{Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Enum: enum}}}
	spec.Properties["profileCustomizations"].Properties["devActualUtilizationProfile"] = apiextensionsv1.JSONSchemaProps{}
	root.Properties["spec"] = spec
	rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: f.hco, Nodes: f.nodes, Infrastructure: f.infra,
		CRDs: append(f.crds, crd), Observed: f.observed})
	rc.AssumeAllKinds = true
	return rc
}

// hostileAt returns the map at path in m (which must exist).
func hostileAt(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func hostileListAt(m map[string]any, i int, path ...string) map[string]any {
	l := hostileAt(m, path[:len(path)-1]...)[path[len(path)-1]].([]any)
	return l[i].(map[string]any)
}

func (f *hostileFacts) hcoSpec() map[string]any { return hostileAt(f.hco.Object, "spec") }
func (f *hostileFacts) liveSpec(key string) map[string]any {
	return hostileAt(f.live[key].Object, "spec")
}

func hostileSetAnn(u *unstructured.Unstructured, k string, v any) {
	ann := u.GetAnnotations()
	ann[k] = v.(string)
	u.SetAnnotations(ann)
}

const (
	lokiKey  = "LokiStack/openshift-logging/logging-loki"
	deschKey = "KubeDescheduler/openshift-kube-descheduler-operator/cluster"
	sbrKey   = "StorageBasedRemediationConfig/openshift-workload-availability/kubevirt-detect-only"
	cmcKey   = "ConfigMap/openshift-monitoring/cluster-monitoring-config"
)

// hostileInputs lists every value the templates read from the cluster.
func hostileInputs(cat *catalog.Catalog) []hostileInput {
	placement := func(f *hostileFacts) map[string]any {
		return hostileAt(f.hcoSpec(), "deployment", "nodePlacements", "workload")
	}
	lookedUp := func(f *hostileFacts, kind string) map[string]any {
		for k, u := range f.observed.Objects {
			if k.GVK.Kind == kind {
				return u.Object
			}
		}
		panic(kind)
	}
	const exporter = "kubevirt-metrics-exporter-daemonset"
	inputs := []hostileInput{
		{name: "HCO annotation sbr-storage-class", benign: "nfs-csi", reads: []string{"sbr-detect-only"}, annotation: "platform.kubevirt.io/sbr-storage-class",
			set: func(f *hostileFacts, v any) { hostileSetAnn(f.hco, "platform.kubevirt.io/sbr-storage-class", v) }},
		{name: "HCO annotation disabled-resources", benign: "MachineConfig/none-such", annotation: "platform.kubevirt.io/disabled-resources",
			set: func(f *hostileFacts, v any) { hostileSetAnn(f.hco, "platform.kubevirt.io/disabled-resources", v) }},
		{name: "HCO pciDeviceSelector", benign: "10DE:1EB8", reads: []string{"vfio-assignment", "vfio-assignment-master"},
			set: func(f *hostileFacts, v any) {
				hostileListAt(f.hcoSpec(), 0, "virtualization", "permittedHostDevices", "pciHostDevices")["pciDeviceSelector"] = v
			}},
		{name: "HCO parallelMigrationsPerCluster", benign: int64(5), reads: []string{"descheduler-loadaware"},
			set: func(f *hostileFacts, v any) {
				hostileAt(f.hcoSpec(), "virtualization", "liveMigrationConfig")["parallelMigrationsPerCluster"] = v
			}},
		{name: "HCO parallelOutboundMigrationsPerNode", benign: int64(2), reads: []string{"descheduler-loadaware"},
			set: func(f *hostileFacts, v any) {
				hostileAt(f.hcoSpec(), "virtualization", "liveMigrationConfig")["parallelOutboundMigrationsPerNode"] = v
			}},
		{name: "HCO workload nodeSelector value", benign: "true", reads: []string{exporter},
			set: func(f *hostileFacts, v any) { hostileAt(placement(f), "nodeSelector")["example.com/vm"] = v }},
		{name: "HCO workload nodeSelector key", benign: "example.com/vm", reads: []string{exporter}, key: true,
			set: func(f *hostileFacts, v any) { placement(f)["nodeSelector"] = map[string]any{v.(string): "true"} }},
		{name: "HCO workload toleration value", benign: "true", reads: []string{exporter},
			set: func(f *hostileFacts, v any) { hostileListAt(placement(f), 0, "tolerations")["value"] = v }},
		{name: "HCO workload affinity value", benign: "true", reads: []string{exporter},
			set: func(f *hostileFacts, v any) {
				terms := hostileAt(placement(f), "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
				hostileListAt(hostileListAt(terms, 0, "nodeSelectorTerms"), 0, "matchExpressions")["values"] = []any{v}
			}},
		{name: "HCO ksmConfiguration", benign: "true", reads: []string{"thp-tuning-worker"},
			set: func(f *hostileFacts, v any) {
				hostileAt(f.hcoSpec(), "virtualization")["ksmConfiguration"] = map[string]any{"nodeLabelSelector": map[string]any{"matchLabels": map[string]any{"x": v}}}
			}},
		{name: "HCO featureGates name", benign: "OtherGate", reads: []string{"kubelet-worker"},
			set: func(f *hostileFacts, v any) { f.hcoSpec()["featureGates"] = []any{map[string]any{"name": v}} }},
		{name: "node label cpu-model.vendor_id", benign: "GenuineIntel", reads: []string{"pci-passthrough", "vfio-assignment"},
			set: func(f *hostileFacts, v any) {
				for i := range f.nodes {
					f.nodes[i].Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = v.(string)
				}
			}},
		{name: "node label pci device", benign: "10de", reads: []string{"pci-passthrough"},
			set: func(f *hostileFacts, v any) {
				for i := range f.nodes {
					delete(f.nodes[i].Labels, "feature.node.kubernetes.io/pci-10de.present")
					f.nodes[i].Labels["feature.node.kubernetes.io/pci-"+v.(string)+".present"] = "true"
				}
			}},
		{name: "Infrastructure platform", benign: "BareMetal",
			set: func(f *hostileFacts, v any) { hostileAt(f.infra.Object, "status", "platformStatus")["type"] = v }},
		{name: "lookup PrometheusRule record", benign: "descheduler:other:avg1m", reads: []string{"descheduler-loadaware"},
			set: func(f *hostileFacts, v any) {
				hostileListAt(hostileListAt(lookedUp(f, "PrometheusRule"), 0, "spec", "groups"), 1, "rules")["record"] = v
			}},
		{name: "lookup FenceAgentsRemediationTemplate condition type", benign: "Other", reads: []string{"node-health-check"},
			set: func(f *hostileFacts, v any) {
				hostileListAt(lookedUp(f, "FenceAgentsRemediationTemplate"), 1, "status", "conditions")["type"] = v
			}},
		{name: "lookup FenceAgentsRemediationTemplate condition status", benign: "True", reads: []string{"node-health-check"},
			set: func(f *hostileFacts, v any) {
				hostileListAt(lookedUp(f, "FenceAgentsRemediationTemplate"), 0, "status", "conditions")["status"] = v
			}},
		{name: "StorageProfile status.storageClass", benign: "nfs-csi", reads: []string{"sbr-detect-only"},
			set: func(f *hostileFacts, v any) {
				hostileAt(f.observed.StorageProfiles[0].Object, "status")["storageClass"] = v
			}},
		{name: "StorageProfile name", benign: "nfs-csi", reads: []string{"sbr-detect-only"},
			set: func(f *hostileFacts, v any) {
				p := f.observed.StorageProfiles[0]
				delete(hostileAt(p.Object, "status"), "storageClass")
				p.SetName(v.(string))
			}},
		{name: "default StorageClass name", benign: "standard", reads: []string{"logging-lokistack"}, emptyIsAbsent: true,
			set: func(f *hostileFacts, v any) {
				f.observed.StorageClasses[0].SetName(v.(string))
				delete(f.liveSpec(lokiKey), "storageClassName")
			}},
		{name: "live LokiStack storageClassName", benign: "gp3-csi", reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) { f.liveSpec(lokiKey)["storageClassName"] = v }},
		{name: "live LokiStack secret name", benign: "logging-loki-s3", reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) { hostileAt(f.liveSpec(lokiKey), "storage", "secret")["name"] = v }},
		{name: "live LokiStack secret type", benign: "s3", reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) { hostileAt(f.liveSpec(lokiKey), "storage", "secret")["type"] = v }},
		{name: "live LokiStack size", benign: "1x.demo", reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) { f.liveSpec(lokiKey)["size"] = v }},
		{name: "live LokiStack retention days", benign: int64(7), reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) {
				hostileAt(f.liveSpec(lokiKey), "limits", "global", "retention")["days"] = v
			}},
		{name: "live LokiStack schema version", benign: "v13", reads: []string{"logging-lokistack"},
			set: func(f *hostileFacts, v any) {
				hostileListAt(f.liveSpec(lokiKey), 0, "storage", "schemas")["version"] = v
			}},
		{name: "live KubeDescheduler profile", benign: "LowNodeUtilization", reads: []string{"descheduler-loadaware"},
			set: func(f *hostileFacts, v any) { f.liveSpec(deschKey)["profiles"].([]any)[1] = v }},
		{name: "live SBR sharedStorageClass", benign: "nfs-csi", reads: []string{"sbr-detect-only"},
			set: func(f *hostileFacts, v any) { f.liveSpec(sbrKey)["sharedStorageClass"] = v }},
		{name: "live cluster-monitoring-config config.yaml", benign: "prometheusK8s:\n  retention: 1d\n", reads: []string{"ksm-node-exporter-collector"},
			set: func(f *hostileFacts, v any) { hostileAt(f.live[cmcKey].Object, "data")["config.yaml"] = v }},
		{name: "KubeDescheduler CRD profile enum", benign: "SoftTopologyAndDuplicates", reads: []string{"descheduler-loadaware"},
			set: func(f *hostileFacts, v any) { f.crdEnum = v.(string) }},
		{name: "operand image (environment)", benign: "quay.io/kubevirt/metrics-exporter:v2", reads: []string{exporter}, emptyIsAbsent: true,
			set: func(f *hostileFacts, v any) { f.observed.Images["kubevirt-metrics-exporter"] = v.(string) }},
	}
	for _, f := range cat.Features {
		if f.Switch == "" {
			continue
		}
		key := f.SwitchAnnotation()
		inputs = append(inputs, hostileInput{name: "HCO switch " + key, benign: "true", annotation: key, isSwitch: true,
			set: func(f *hostileFacts, v any) { hostileSetAnn(f.hco, key, v) }})
	}
	return inputs
}

// hostileHead is what a head render named, or its error.
type hostileHead struct {
	key string
	err error
}

// isShapeError: err is a value refused for its shape.
func isShapeError(err error) bool {
	var m *annotations.Malformed
	_, inv := annotations.AsInvalid(err)
	return errors.As(err, &m) || inv
}

// keyPaths is the set of JSON paths of o's keys; list elements by index.
// norm rewrites a key (the input's value, when it is a key).
func keyPaths(o map[string]any, norm func(string) string) map[string]bool {
	out := map[string]bool{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				q := p + "/" + norm(k)
				out[q] = true
				walk(e, q)
			}
		case []any:
			for i, e := range t {
				q := fmt.Sprintf("%s/%d", p, i)
				out[q] = true
				walk(e, q)
			}
		}
	}
	walk(o, "")
	return out
}

// renderedObject is what the decision rendered: the desired object when
// included, else the head that names it (nil when rendering failed).
func renderedObject(d engine.Decision) map[string]any {
	if d.Desired != nil {
		return d.Desired.Object
	}
	if d.Rendered != nil {
		return d.Rendered.Object
	}
	return nil
}

// kernelArgsProblem says what is wrong with a MachineConfig's kernel
// arguments: each must be one token, without whitespace.
func kernelArgsProblem(o map[string]any) string {
	if o == nil || o["kind"] != "MachineConfig" {
		return ""
	}
	args, _, err := unstructured.NestedFieldNoCopy(o, "spec", "kernelArguments")
	if err != nil || args == nil {
		return ""
	}
	list, ok := args.([]any)
	if !ok {
		return fmt.Sprintf("kernelArguments is a %T", args)
	}
	for _, a := range list {
		s, ok := a.(string)
		if !ok || s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
			return fmt.Sprintf("kernel argument %.60q is not one token", a)
		}
	}
	return ""
}

func diffPaths(a, b map[string]bool) string {
	var only []string
	for p := range a {
		if !b[p] {
			only = append(only, "+"+p)
		}
	}
	for p := range b {
		if !a[p] {
			only = append(only, "-"+p)
		}
	}
	sort.Strings(only)
	if len(only) > 8 {
		only = append(only[:8], "...")
	}
	return strings.Join(only, " ")
}

// Strings from the cluster are data, never structure: for every input a
// template reads and every hostile value, each asset either refuses to
// render (Invalid or Failed, saying why) or renders the object it renders
// from an ordinary value, key for key; and no kernel argument splits.
func TestHostileClusterValues(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	ctx := context.Background()
	// evalAll evaluates every asset, and renders each one's head: what
	// names its object when it is not applied (turned off, waiting).
	evalAll := func(in hostileInput, v any) ([]engine.Decision, []hostileHead) {
		f := hostileBase(cat)
		in.set(f, v)
		rc := f.context()
		out := make([]engine.Decision, len(cat.Assets))
		heads := make([]hostileHead, len(cat.Assets))
		for i := range cat.Assets {
			a := &cat.Assets[i]
			out[i] = ev.Evaluate(ctx, a, rc, f.live)
			h, err := ev.Renderer.RenderHead(a.Path, rc, a.Params)
			if err == nil {
				heads[i].key = engine.ObjectKey(h)
			}
			heads[i].err = err
		}
		return out, heads
	}
	for _, in := range hostileInputs(cat) {
		t.Run(in.name, func(t *testing.T) {
			benign, benignHeads := evalAll(in, in.benign)
			for _, name := range in.reads {
				for _, d := range benign {
					if d.Asset.Name == name && d.Verdict != engine.VerdictIncluded {
						t.Fatalf("benign %v: %s is %s (%s), want it rendered", in.benign, name, d.Verdict, d.Reason)
					}
				}
			}
			for _, d := range benign {
				if p := kernelArgsProblem(renderedObject(d)); p != "" {
					t.Errorf("benign %v: %s: %s", in.benign, d.Asset.Name, p)
				}
			}
			// What the hostile values did where they changed the outcome.
			changed := map[string]int{}
			for _, v := range hostileValues {
				if v == "" && in.emptyIsAbsent {
					continue
				}
				norm := func(k string) string { return k }
				if in.key {
					// JSON turns invalid UTF-8 into U+FFFD: either spelling.
					rt, _ := json.Marshal(v)
					var back string
					_ = json.Unmarshal(rt, &back)
					norm = func(k string) string {
						if k == v || k == back || k == in.benign {
							return "<input>"
						}
						return k
					}
				}
				decisions, heads := evalAll(in, v)
				for i, d := range decisions {
					b := benign[i]
					name := d.Asset.Name
					// A value without its shape never hides which object
					// an asset owns (so one turned off is still removed).
					// A template's own guard may refuse (as for no value).
					if h, bh := heads[i], benignHeads[i]; !in.isSwitch && bh.err == nil && (isShapeError(h.err) || h.err == nil && h.key != bh.key) {
						t.Errorf("%.40q: %s head names %q (%v), %q with the benign value", v, name, h.key, h.err, bh.key)
					}
					if p := kernelArgsProblem(renderedObject(d)); p != "" {
						t.Errorf("%.40q: %s: %s", v, name, p)
					}
					if d.Verdict != b.Verdict {
						changed[fmt.Sprintf("%s %s", name, d.Verdict)]++
					}
					switch {
					case d.Verdict == engine.VerdictInvalid || d.Verdict == engine.VerdictFailed:
						// Refused; it must say why, briefly.
						if d.Reason == "" || len(d.Reason) > 4096 {
							t.Errorf("%.40q: %s is %s with a reason of %d bytes", v, name, d.Verdict, len(d.Reason))
						}
						if in.annotation != "" && b.Verdict != d.Verdict && (d.Verdict != engine.VerdictInvalid || d.Annotation != in.annotation) {
							t.Errorf("%.40q: %s is %s naming %q (%s), want Invalid naming %s", v, name, d.Verdict, d.Annotation, d.Reason, in.annotation)
						}
					case d.Verdict != b.Verdict:
						t.Errorf("%.40q: %s is %s (%s), %s with the benign value", v, name, d.Verdict, d.Reason, b.Verdict)
					default:
						got, want := renderedObject(d), renderedObject(b)
						if (got == nil) != (want == nil) {
							t.Errorf("%.40q: %s rendered %v, benign %v", v, name, got != nil, want != nil)
							continue
						}
						if got == nil {
							continue
						}
						if diff := diffPaths(keyPaths(got, norm), keyPaths(want, norm)); diff != "" {
							t.Errorf("%.40q: %s (%s): structure differs from the benign render: %s", v, name, d.Verdict, diff)
						}
					}
				}
			}
			t.Logf("refused (asset outcome: values): %v; every other render kept its structure", changed)
		})
	}
}
