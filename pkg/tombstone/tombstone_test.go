package tombstone

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"t/v1/a.yaml":     {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n")},
		"t/v1/notes.txt":  {Data: []byte("ignored")},
		"t/v2/b.yml":      {Data: []byte("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: b\n")},
		"bad/v1/x.yaml":   {Data: []byte("kind: ConfigMap\nmetadata: {}\n")},
		"worse/v1/y.yaml": {Data: []byte("{")},
	}
	ts, err := Load(fsys, "t")
	if err != nil || len(ts) != 2 || ts[0].Release != "v1" || ts[1].Key() != "MachineConfig.machineconfiguration.openshift.io/b" {
		t.Fatalf("got %+v %v", ts, err)
	}
	if _, err := Load(fsys, "bad"); err == nil {
		t.Fatal("a tombstone without a name must fail loading")
	}
	if _, err := Load(fsys, "worse"); err == nil {
		t.Fatal("a malformed tombstone must fail loading")
	}
}

// countingReader answers NotFound and counts reads.
type countingReader struct{ n int }

func (c *countingReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	c.n++
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (c *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func TestReapReadsUnwatchedKindsOnce(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("gone")
	ts := []Tombstone{{Path: "t/v1/gone.yaml", Object: u}}

	direct, cached := &countingReader{}, &countingReader{}
	r := &Reaper{Cache: cached, Reader: direct, Watched: func(schema.GroupVersionKind) bool { return false }}
	for i := 0; i < 3; i++ {
		if res := r.Reap(context.Background(), ts, nil); res[0].Status != Gone || res[0].Deleted {
			t.Fatalf("%+v", res[0])
		}
	}
	if direct.n != 1 || cached.n != 0 {
		t.Fatalf("an unwatched kind is read from the API server once: direct %d cached %d", direct.n, cached.n)
	}

	// A watched kind is read from the label-filtered cache every time (no
	// request): a miss there means nothing deletable exists.
	r = &Reaper{Cache: cached, Reader: direct, Watched: func(schema.GroupVersionKind) bool { return true }}
	r.Reap(context.Background(), ts, nil)
	r.Reap(context.Background(), ts, nil)
	if direct.n != 1 || cached.n != 2 {
		t.Fatalf("direct %d cached %d", direct.n, cached.n)
	}
}

// failingReader fails every read and counts them.
type failingReader struct{ n int }

func (f *failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	f.n++
	return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", nil)
}

func (f *failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// fakeBackoff holds a key from its first failure until released.
type fakeBackoff struct{ failed map[string]int }

func (b *fakeBackoff) Failed(key string) time.Duration { b.failed[key]++; return time.Minute }
func (b *fakeBackoff) Succeeded(key string)            { delete(b.failed, key) }
func (b *fakeBackoff) Attempt(key string) gate.Verdict {
	if b.failed[key] > 0 {
		return gate.Verdict{Outcome: engine.Failed, RetryAfter: time.Minute}
	}
	return gate.Verdict{Go: true}
}

// A tombstone whose read or deletion failed waits for its backoff: its
// last failure is reported again without a request, and a success ends it.
func TestReapFailureWaitsForItsBackoff(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("refused")
	ts := []Tombstone{{Path: "t/v1/refused.yaml", Object: u}}
	reads, b := &failingReader{}, &fakeBackoff{failed: map[string]int{}}
	r := &Reaper{Cache: reads, Reader: reads, Watched: func(schema.GroupVersionKind) bool { return false }, Backoff: b}
	for i := 0; i < 3; i++ {
		res := r.Reap(context.Background(), ts, nil)
		if res[0].Status != Error || res[0].RetryAfter != time.Minute || !apierrors.IsForbidden(res[0].Err) {
			t.Fatalf("pass %d: %+v", i, res[0])
		}
	}
	if reads.n != 1 {
		t.Fatalf("read %d times within one backoff, want 1", reads.n)
	}
	b.failed = map[string]int{} // the backoff is over
	r.Reader, r.Cache = &countingReader{}, &countingReader{}
	if res := r.Reap(context.Background(), ts, nil); res[0].Status != Gone {
		t.Fatalf("after the backoff: %+v", res[0])
	}
}

// The shipped tombstones load, and a carried one names its carrier.
func TestShippedTombstonesNameTheirCarriers(t *testing.T) {
	ts, err := Load(assets.FS, assets.TombstonesDir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, tb := range ts {
		for _, name := range strings.Split(tb.CarriedBy, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			carried++
			a, ok := cat.Get(name)
			if !ok {
				t.Errorf("%s: carried by %q, which is not in the catalog", tb.Path, name)
				continue
			}
			dropIn := a.Component == "MachineConfig" && tb.Object.GetKind() == "KubeletConfig"
			if a.Component != tb.Object.GetKind() && !dropIn {
				t.Errorf("%s: carried by %s, a %s", tb.Path, name, a.Component)
			}
		}
	}
	if carried == 0 {
		t.Fatal("no shipped tombstone is carried by an asset")
	}
}
