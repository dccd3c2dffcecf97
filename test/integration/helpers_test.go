package integration

import (
	"strconv"
	"time"

	"bytes"
	"context"
	"encoding/json"

	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
)

var (
	hcoGVK = schema.GroupVersionKind{Group: "hco.kubevirt.io", Version: "v1", Kind: "HyperConverged"}
	mcGVK  = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	// OpenShift's Scheduler: mastersSchedulable decides the master assets.
	schedulerGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"}
	kdGVK        = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}
)

const (
	hcoName = "kubevirt-hyperconverged"
	psiMC   = "99-worker-kubevirt-psi-karg"
	swapMC  = "90-worker-kubevirt-swap"
)

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func newObj(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// get reads an object directly from the API server; nil when absent.
func get(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := newObj(gvk, namespace, name)
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return u
}

func hco() *unstructured.Unstructured { return get(hcoGVK, hcoNamespace, hcoName) }

// update reads the object, lets mutate change it and writes it back as the
// named field manager (a user's kubectl edit or another operator),
// retrying on conflicts. It returns the new resourceVersion.
func update(gvk schema.GroupVersionKind, namespace, name, manager string, mutate func(u *unstructured.Unstructured)) string {
	var rv string
	Eventually(func() error {
		u := get(gvk, namespace, name)
		if u == nil {
			return fmt.Errorf("%s %s/%s not found", gvk.Kind, namespace, name)
		}
		mutate(u)
		if err := k8s.Update(context.Background(), u, client.FieldOwner(manager)); err != nil {
			return err
		}
		rv = u.GetResourceVersion()
		return nil
	}).Should(Succeed())
	return rv
}

func setAnnotation(u *unstructured.Unstructured, k, v string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if v == "" {
		delete(a, k)
	} else {
		a[k] = v
	}
	u.SetAnnotations(a)
}

// reconciledAt waits until a reconcile that started from the HCO at
// resourceVersion rv has finished (every asset's status is then recorded).
func reconciledAt(rv string) {
	Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
}

// reconciledSince waits until a reconcile that started from the HCO at
// resourceVersion rv or later has finished: for edits after which the
// autopilot may write the HCO itself (the next reconcile then starts from
// its own write). etcd's resourceVersions grow, and envtest's are numbers.
func reconciledSince(rv string) {
	want, err := strconv.ParseInt(rv, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() int64 {
		got, _ := strconv.ParseInt(rec.Snapshot().Health.HCOResourceVersion, 10, 64)
		return got
	}).Should(BeNumerically(">=", want))
}

// settling names the assets waiting for a fact to settle.
func settling() []string {
	var out []string
	for _, s := range rec.Snapshot().Assets {
		if s.Outcome == engine.Settling {
			out = append(out, s.Asset)
		}
	}
	return out
}

// untilSettled waits until no asset waits for a fact: a spec that added or
// removed nodes leaves the next one a cluster at rest.
func untilSettled() {
	// A reconcile that started after the caller's change first: a status
	// read before it would say "at rest" for facts it has not seen.
	reconciledAt(poke())
	Eventually(settling).WithTimeout(testSettle+30*time.Second).Should(BeEmpty(), "facts settle")
}

// workers is the number of workers the autopilot sees now (its caches).
func workers() int {
	eval, _, err := rec.Preview(context.Background())
	Expect(err).NotTo(HaveOccurred())
	return eval.Context.Topology.Workers
}

func status(asset string) report.AssetStatus {
	s, _ := rec.Snapshot().Asset(asset)
	return s
}

// outcomeAt waits until the reconciler has decided asset on exactly the
// given live resourceVersion, and returns that status.
func outcomeAt(asset, rv string) report.AssetStatus {
	var s report.AssetStatus
	Eventually(func() string {
		s = status(asset)
		return s.ObservedResourceVersion
	}).Should(Equal(rv), "asset %s to be reconciled at resourceVersion %s (last: %+v)", asset, rv, status(asset))
	return s
}

func outcomeOf(asset string) func() engine.Outcome {
	return func() engine.Outcome { return status(asset).Outcome }
}

// events lists the Events of reason ("": every one) whose note holds every
// string of contains.
func events(reason string, contains ...string) []eventsv1.Event {
	var list eventsv1.EventList
	Expect(k8s.List(context.Background(), &list)).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if reason != "" && e.Reason != reason {
			continue
		}
		ok := true
		for _, c := range contains {
			ok = ok && strings.Contains(e.Note, c)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out
}

func kernelArgs(name string) []any {
	mc := get(mcGVK, "", name)
	if mc == nil {
		return nil
	}
	args, _, _ := unstructured.NestedSlice(mc.Object, "spec", "kernelArguments")
	return args
}

func nestedInt(u *unstructured.Unstructured, path ...string) int64 {
	if u == nil {
		return -1
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !found {
		return -1
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

// seriesWith counts the series of a metric vector whose label has value.
func seriesWith(c prometheus.Collector, label, value string) int {
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var pb dto.Metric
		Expect(m.Write(&pb)).To(Succeed())
		for _, l := range pb.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				n++
			}
		}
	}
	return n
}

// logLines collects JSON log lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// find returns the log entries whose fields equal every key/value in want.
func (l *logLines) find(want map[string]string) []map[string]any {
	l.mu.Lock()
	raw := l.buf.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(raw, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && fmt.Sprint(e[k]) == v
		}
		if ok {
			out = append(out, e)
		}
	}
	return out
}

// embedded is the catalog the autopilot runs.
func embedded() *catalog.Catalog {
	cat, _, err := app.LoadEmbedded()
	Expect(err).NotTo(HaveOccurred())
	return cat
}

// appliedAt is when the autopilot last applied a MachineConfig (its Apply
// entry in managedFields).
func appliedAt(name string) time.Time {
	var at time.Time
	for _, e := range get(mcGVK, "", name).GetManagedFields() {
		if e.Manager == annotations.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Time != nil {
			at = e.Time.Time
		}
	}
	Expect(at.IsZero()).To(BeFalse(), "an Apply entry of the autopilot on MachineConfig %s", name)
	return at
}

// mcWrites counts the autopilot's corrective writes to MachineConfig name.
func mcWrites(name string) float64 {
	return testutil.ToFloat64(metrics.CorrectiveWrites.WithLabelValues("MachineConfig", "", name))
}

// closedWindow sets, as manager, a daily disruption window that opens two
// hours from now (UTC), waits for a reconcile that saw it, and removes it
// (and any clock shift) when the spec ends; it returns when it opens.
func closedWindow(manager string) time.Time {
	opensAt := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute)
	window := fmt.Sprintf("daily %s-%s UTC", opensAt.Format("15:04"), opensAt.Add(time.Hour).Format("15:04"))
	reconciledAt(update(hcoGVK, hcoNamespace, hcoName, manager, func(u *unstructured.Unstructured) {
		setAnnotation(u, annotations.DisruptionWindow, window)
	}))
	DeferCleanup(func() {
		clockShift.Store(0)
		update(hcoGVK, hcoNamespace, hcoName, manager, func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisruptionWindow, "")
		})
	})
	return opensAt
}

// setPoolState writes a MachineConfigPool as MCO does (pkg/controller/node/
// status.go calculateStatus): rolling, the render controller has set a
// new render in the spec and the nodes still run the one in the status
// (Updated False, Updating True); at rest, the status's render is the
// spec's (Updated True). observedGeneration is the generation judged, and
// it is not Degraded.
func setPoolState(ctx context.Context, name string, rolling bool) {
	GinkgoHelper()
	gvk := mcGVK.GroupVersion().WithKind("MachineConfigPool")
	Eventually(func() error {
		p := get(gvk, "", name)
		if p == nil {
			return fmt.Errorf("no MachineConfigPool %s", name)
		}
		target := "rendered-" + name + "-at-rest"
		if rolling {
			target = "rendered-" + name + "-rolling"
		}
		if cur, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name"); cur != target {
			if err := unstructured.SetNestedField(p.Object, target, "spec", "configuration", "name"); err != nil {
				return err
			}
			if err := k8s.Update(ctx, p); err != nil {
				return err
			}
		}
		updated, busy, running := "True", "False", target
		if rolling {
			updated, busy, running = "False", "True", "rendered-"+name+"-at-rest"
		}
		at := "2026-11-24T00:00:00Z"
		if err := unstructured.SetNestedSlice(p.Object, []any{
			map[string]any{"type": "Updated", "status": updated, "lastTransitionTime": at},
			map[string]any{"type": "Updating", "status": busy, "lastTransitionTime": at},
			map[string]any{"type": "Degraded", "status": "False", "lastTransitionTime": at},
		}, "status", "conditions"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(p.Object, running, "status", "configuration", "name"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(p.Object, p.GetGeneration(), "status", "observedGeneration"); err != nil {
			return err
		}
		return k8s.Status().Update(ctx, p)
	}).Should(Succeed())
}

// workerPoolAtRest makes sure the worker MachineConfigPool exists (its CRD
// from the vendor, the pool as OpenShift ships it, as the KubeletConfig
// spec leaves it when it ran first) and is at rest; created says whether
// this call created it.
func workerPoolAtRest(ctx context.Context) (created bool) {
	GinkgoHelper()
	poolGVK := mcGVK.GroupVersion().WithKind("MachineConfigPool")
	installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "machineconfigpool-crd.yaml")))
	if get(poolGVK, "", "worker") == nil {
		pool := newObj(poolGVK, "", "worker")
		pool.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""})
		Expect(unstructured.SetNestedField(pool.Object, map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}, "spec", "machineConfigSelector")).To(Succeed())
		Expect(unstructured.SetNestedField(pool.Object, map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/worker": ""}}, "spec", "nodeSelector")).To(Succeed())
		Expect(k8s.Create(ctx, pool)).To(Succeed())
		created = true
	}
	setPoolState(ctx, "worker", false)
	return created
}
