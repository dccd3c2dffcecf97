// Package render turns an asset template and a RenderContext into exactly
// one unstructured object.
//
// Templates use text/template with missing keys as errors and a safe subset
// of sprig: nothing that reads the environment, the clock, randomness or
// crypto, so the same context always renders the same bytes (a changing
// render would be endless drift).
package render

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/reservation"
)

// unsafeFuncs are the sprig functions whose output depends on more than the input.
var unsafeFuncs = []string{
	"env", "expandenv", "getHostByName",
	"now", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify", "ago", "duration",
	"durationRound", "htmlDate", "htmlDateInZone", "mustDateModify", "must_date_modify", "toDate", "mustToDate", "unixEpoch",
	"randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
	"genPrivateKey", "derivePassword", "buildCustomCert", "genCA", "genCAWithKey", "genSelfSignedCert",
	"genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "encryptAES", "decryptAES",
	"bcrypt", "htpasswd",
}

// Renderer parses each template once and renders it against contexts.
type Renderer struct {
	fsys fs.FS
	mu   sync.Mutex
	// free are the sets no render is using. A render takes one (or makes
	// one when all are busy) and gives it back, so one-at-a-time rendering
	// parses every template once and never copies one.
	free []*set
	// decoded remembers the object each rendered output decoded to: in
	// steady state a template renders the same bytes every reconcile, and
	// parsing them again was most of a render's cost.
	decoded map[[sha256.Size]byte]*unstructured.Unstructured
	// reads memoizes ReadsOf by path (templates never change in a process).
	reads sync.Map
}

// set is the templates parsed into one namespace whose context functions
// read rc, the context of the render holding the set. Binding the
// functions once per set, not per render, is what makes a render cheap:
// text/template copies its whole function map (some 200 sprig functions)
// on every Funcs and Clone.
type set struct {
	root   *template.Template
	rc     *rendercontext.RenderContext
	parsed map[string]*template.Template
	// headOnly: the render only names its object (RenderHead).
	headOnly bool
}

// maxDecoded bounds the decode memo; it is dropped whole when full (a
// reconcile renders each asset once, so a full memo means inputs churn).
const maxDecoded = 1024

// New returns a Renderer reading templates from fsys.
func New(fsys fs.FS, opts ...Option) *Renderer {
	r := &Renderer{fsys: fsys, decoded: map[[sha256.Size]byte]*unstructured.Unstructured{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Option configures a Renderer.
type Option func(*Renderer)

// OneShot is for a process that renders each template once (the render
// command): no decode memo, whose copies only cost there.
func OneShot() Option {
	return func(r *Renderer) { r.decoded = nil }
}

// Data is what a template sees.
type Data struct {
	Namespace string
	HCO       map[string]any
	Topology  rendercontext.Topology
	Hardware  rendercontext.Hardware
	Params    map[string]string
	// Images are the operand images by name (catalog condition image).
	Images map[string]string
	// Live is the object on the cluster, for templates that keep part of
	// it (nil when absent or not yet read).
	Live map[string]any
}

// UsesLive reports whether the template at path reads .Live, so callers
// render it again once the live object is known.
func (r *Renderer) UsesLive(path string) bool {
	return r.ReadsOf(path).Field("Live")
}

// ReadsHCO reports whether the template at path reads the HCO (.HCO, or
// its feature gates), so a render from an HCO the golden config has not
// converged yet would differ. Unparsable counts as reading it. Switches
// and exclusions read annotations, which the golden config never writes.
func (r *Renderer) ReadsHCO(path string) bool {
	reads := r.ReadsOf(path)
	return reads.Field("HCO") || len(reads.HCOPaths) > 0 || reads.Funcs["featureGate"]
}

// Render renders the template at path into one object. live is the
// object's current state, or nil.
func (r *Renderer) Render(path string, rc *rendercontext.RenderContext, params map[string]string, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out, err := r.execute(path, rc, params, live)
	if err != nil {
		return nil, err
	}
	return r.decode(path, out, false)
}

// RenderHead renders the template at path and decodes only what names its
// object: apiVersion, kind and metadata, and spec for the kinds whose node
// pool a selector there names (PoolSelectorKinds). It is for objects that
// will not be applied (an inactive or waiting asset: which object would it
// own?), and skips decoding the rest, most of a render's cost. A document
// whose top level it cannot split is decoded whole.
func (r *Renderer) RenderHead(path string, rc *rendercontext.RenderContext, params map[string]string) (*unstructured.Unstructured, error) {
	out, err := r.run(path, rc, params, nil, true)
	if err != nil {
		return nil, err
	}
	return r.decode(path, out, true)
}

// RenderOrHead is Render, except that an object whose render waits for the
// cluster (a default StorageClass an offline context does not know) is
// returned as its head: for generators that name every object (RBAC, docs)
// and read whole only the node objects, which never wait.
func (r *Renderer) RenderOrHead(path string, rc *rendercontext.RenderContext, params map[string]string) (*unstructured.Unstructured, error) {
	u, err := r.Render(path, rc, params, nil)
	if _, waits := AsWait(err); waits {
		return r.RenderHead(path, rc, params)
	}
	return u, err
}

// execute renders the template at path to bytes.
func (r *Renderer) execute(path string, rc *rendercontext.RenderContext, params map[string]string, live *unstructured.Unstructured) ([]byte, error) {
	return r.run(path, rc, params, live, false)
}

// run is execute; headOnly renders only to name the object (see checked).
func (r *Renderer) run(path string, rc *rendercontext.RenderContext, params map[string]string, live *unstructured.Unstructured, headOnly bool) ([]byte, error) {
	s := r.take()
	defer r.give(s)
	t, err := r.template(s, path)
	if err != nil {
		return nil, err
	}
	s.rc, s.headOnly = rc, headOnly
	hco := rc.HCO
	if hco == nil {
		hco = map[string]any{}
	}
	if params == nil {
		params = map[string]string{}
	}
	images := rc.Images
	if images == nil {
		images = map[string]string{}
	}
	// A pool-scoped asset sees only its pools' hardware.
	hw, err := rc.HardwareFor(params)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	data := Data{Namespace: rc.Namespace, HCO: hco, Topology: rc.Topology, Hardware: hw, Params: params, Images: images}
	if live != nil {
		data.Live = live.Object
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// take returns a set no other render uses.
func (r *Renderer) take() *set {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.free); n > 0 {
		s := r.free[n-1]
		r.free = r.free[:n-1]
		return s
	}
	s := &set{parsed: map[string]*template.Template{}}
	s.root = template.New("").Option("missingkey=error").Funcs(sharedFuncs()).Funcs(s.contextFuncs())
	return s
}

func (r *Renderer) give(s *set) {
	s.rc, s.headOnly = nil, false
	r.mu.Lock()
	r.free = append(r.free, s)
	r.mu.Unlock()
}

// decode decodes out, or returns a copy of what the same bytes decoded to.
func (r *Renderer) decode(path string, out []byte, headOnly bool) (*unstructured.Unstructured, error) {
	if r.decoded == nil {
		return decodeHead(path, out, headOnly)
	}
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	if headOnly {
		h.Write([]byte("head\x00"))
	}
	h.Write(out)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	r.mu.Lock()
	u, ok := r.decoded[key]
	r.mu.Unlock()
	if ok {
		return u.DeepCopy(), nil
	}
	u, err := decodeHead(path, out, headOnly)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.decoded) >= maxDecoded {
		clear(r.decoded)
	}
	r.decoded[key] = u.DeepCopy()
	r.mu.Unlock()
	return u, nil
}

var namedTemplate = regexp.MustCompile(`\{\{-?\s*(define|block|template)\b`)

// decodeHead decodes out, or only its head (see RenderHead). The whole
// document is decoded when the head cannot stand alone: it does not
// decode (an alias to an anchor in a dropped section), or it names a kind
// whose pool is in spec but spec was not kept (the kind line read oddly).
func decodeHead(path string, out []byte, headOnly bool) (*unstructured.Unstructured, error) {
	if headOnly {
		if hd, ok := head(out); ok {
			u, err := decodeOne(path, hd)
			if err == nil && (!PoolSelectorKinds[u.GetKind()] || u.Object["spec"] != nil) {
				return u, nil
			}
		}
	}
	return decodeOne(path, out)
}

// template parses the template at path into s, once.
func (r *Renderer) template(s *set, path string) (*template.Template, error) {
	if t, ok := s.parsed[path]; ok {
		return t, nil
	}
	src, err := fs.ReadFile(r.fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	// Templates share the set's namespace: one that defines a named
	// template could replace another file's, and one that calls another
	// file would work or fail by what the set has parsed so far.
	if (bytes.Contains(src, []byte("define")) || bytes.Contains(src, []byte("block")) || bytes.Contains(src, []byte("template"))) && namedTemplate.Match(src) {
		return nil, fmt.Errorf("parse template %s: asset templates may not define or call named templates (define, block, template)", path)
	}
	t, err := s.root.New(path).Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", path, err)
	}
	s.parsed[path] = t
	return t, nil
}

// sharedFuncs is baseFuncs built once: sprig's map has some 200 entries,
// and parsing only reads it.
var sharedFuncs = sync.OnceValue(baseFuncs)

func baseFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range unsafeFuncs {
		delete(f, name)
	}
	// memoryReservation: the kubelet memory reservation whose NUMA sum the
	// memory manager checks (pkg/reservation).
	f["memoryReservation"] = reservation.TemplateValues
	f["toYaml"] = func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	}
	// fromYaml parses a YAML document (a config another operator reads) so
	// a template can merge into it; malformed input fails the render, and
	// a failed render never writes.
	f["fromYaml"] = func(s string) (map[string]any, error) {
		// Numbers stay as written (json.Number): a float64 round trip
		// would turn 1000000 into 1e+06 in someone else's config.
		out := map[string]any{}
		js, err := yaml.YAMLToJSON([]byte(s))
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.UseNumber()
			err = dec.Decode(&out)
		}
		if err != nil {
			return nil, fmt.Errorf("fromYaml: %w", err)
		}
		if out == nil { // an empty document
			out = map[string]any{}
		}
		return out, nil
	}
	return f
}

// contextFuncs expose the render's context to templates: the installed
// CRDs' schemas (for picking the best value an operator version supports),
// switches, and the objects the asset reads. Each reads s.rc at call time.
func (s *set) contextFuncs() template.FuncMap {
	return template.FuncMap{
		// crdEnum: the CRD's values, each checked (a CRD is cluster data).
		"crdEnum": func(crd, path string) ([]string, error) {
			return checkedAll(s, s.rc.Enum(crd, path), func(v string) (string, error) {
				return annotations.ParseEnumValue(fmt.Sprintf("CRD %s %s enum value", crd, path), v)
			})
		},
		"crdEnumFirst": func(crd, path string, candidates ...string) string { return s.rc.EnumFirst(crd, path, candidates...) },
		"crdHasField":  func(crd, path string) bool { return s.rc.HasField(crd, path) },
		// crdKnown: the CRD's schema is known (offline without CRD facts
		// it is not, and a template assumes the newest API).
		"crdKnown": func(crd string) bool { return s.rc.CRDs[crd] != nil },
		// switch "enable-x": the HCO annotation platform.kubevirt.io/enable-x
		// is on; a value that is not understood fails the render (the
		// asset is Invalid and left as it is), never reads as off.
		"switch": func(name string) (bool, error) { return s.rc.Switch(name) },
		// swapOnEveryVMNode: every node that runs VMs reports swap
		// (status.nodeInfo.swap), never inferred from the swap
		// MachineConfig.
		"swapOnEveryVMNode": func() bool { return s.rc.SwapOnEveryVMNode() },
		// hcoSkipsWasp: the HCO's platform.kubevirt.io/autopilot value
		// keeps the HCO from deploying the WASP agent when memory is
		// overcommitted (pkg/hcoreact: the HCO's own rule).
		"hcoSkipsWasp": func() bool { v, ok := s.rc.HCOAnnotation(annotations.Autopilot); return hcoreact.SkipsWasp(v, ok) },
		// featureGate "X": the HCO's spec.featureGates enables X.
		"featureGate": func(name string) bool { return s.rc.FeatureGateEnabled(name) },
		// excluded KIND NAMESPACE NAME: the object is root-excluded, so
		// assets that depend on it can adapt.
		"excluded": func(kind, namespace, name string) bool {
			_, hit := s.rc.Exclusions.Match(kind, namespace, name)
			return hit
		},
		// lookup APIVERSION KIND NAMESPACE NAME: an object the asset
		// declares under reads (nil when absent).
		"lookup": func(apiVersion, kind, namespace, name string) (map[string]any, error) {
			return s.rc.Lookup(apiVersion, kind, namespace, name)
		},
		// storageProfiles: CDI's StorageProfiles, sorted by name, as read:
		// a template checks every field it uses (see the shape checks).
		"storageProfiles": func() ([]any, error) { return s.rc.StorageProfileObjects() },
		// storageClassesOffering ACCESS VOLUMEMODE: the classes whose CDI
		// StorageProfile offers them, sorted.
		"storageClassesOffering": func(accessMode, volumeMode string) ([]string, error) {
			return checkedAll(s, s.rc.StorageClassesOffering(accessMode, volumeMode), func(v string) (string, error) {
				return annotations.ParseDNSSubdomain("StorageProfile storage class", v)
			})
		},
		// defaultStorageClass: the class marked default ("" when none).
		"defaultStorageClass": func() (string, error) {
			name, err := s.rc.DefaultStorageClass()
			if err != nil || name == "" {
				return name, err
			}
			return checked[string](s)(annotations.ParseDNSSubdomain("default StorageClass name", name))
		},
		// storageClassAnnotation KEY: the class the HCO annotation names
		// ("" when absent or empty); any other value that is not a class
		// name is an *annotations.Invalid.
		"storageClassAnnotation": func(key string) (string, error) {
			v, _ := s.rc.HCOAnnotation(key)
			return checked[string](s)(annotations.ParseStorageClassName(key, v))
		},
		// Shape checks for other values read from the cluster (HCO fields,
		// live and looked-up objects): WHAT names the value in the error.
		// pciID WHAT V: a PCI vendor:device id, in lower case.
		"pciID": func(what string, v any) (string, error) { return checked[string](s)(annotations.ParsePCIID(what, v)) },
		// dnsSubdomain WHAT V: an object name.
		"dnsSubdomain": func(what string, v any) (string, error) {
			return checked[string](s)(annotations.ParseDNSSubdomain(what, v))
		},
		// integer WHAT V: a number, as an int64.
		"integer": func(what string, v any) (int64, error) { return checked[int64](s)(annotations.ParseInteger(what, v)) },
		// date WHAT V: a calendar date, YYYY-MM-DD.
		"date": func(what string, v any) (string, error) { return checked[string](s)(annotations.ParseDate(what, v)) },
		// enumValue WHAT V: a one-word enum value.
		"enumValue": func(what string, v any) (string, error) {
			return checked[string](s)(annotations.ParseEnumValue(what, v))
		},
		// labelMap WHAT V: a map of label keys to label values.
		"labelMap": func(what string, v any) (map[string]any, error) {
			return checked[map[string]any](s)(annotations.ParseLabels(what, v))
		},
		// image NAME: the operand image (RELATED_IMAGE_<NAME>), "" if unset.
		"image": func(name string) string { return s.rc.Image(name) },
		// wait REASON: the object cannot be rendered until the cluster
		// offers something (a default StorageClass); the asset waits,
		// reported with REASON as a missing dependency (*Wait).
		"wait": func(reason string) (string, error) { return checked[string](s)("", &Wait{Reason: reason}) },
	}
}

// Wait is a render that cannot complete until the cluster offers what the
// object needs: the asset waits, reported as a missing dependency with
// Reason (what is missing and how to provide it), never as a failure.
type Wait struct{ Reason string }

func (w *Wait) Error() string { return "waiting: " + w.Reason }

// AsWait returns the *Wait err carries, if any.
func AsWait(err error) (*Wait, bool) {
	var w *Wait
	ok := errors.As(err, &w)
	return w, ok
}

// checked passes a shape check's result on, except in a head-only render
// (RenderHead: naming the object of an asset that is not applied), where
// a value without its shape reads as zero: no name depends on one, and an
// asset turned off must still name what it created to remove it.
func checked[T any](s *set) func(T, error) (T, error) {
	return func(v T, err error) (T, error) {
		if err != nil && s.headOnly {
			var zero T
			return zero, nil
		}
		return v, err
	}
}

// checkedAll checks every value; a head-only render drops those without
// their shape (see checked).
func checkedAll(s *set, vs []string, check func(string) (string, error)) ([]string, error) {
	out := vs[:0:0]
	for _, v := range vs {
		c, err := check(v)
		if err != nil {
			if s.headOnly {
				continue
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeOne(path string, out []byte) (*unstructured.Unstructured, error) {
	docs := 0
	u := &unstructured.Unstructured{}
	// Split as kubectl does: at a line that is "---" with at most a
	// comment after it. Any other line starting with "---" is refused
	// ("invalid Yaml document separator"), never split at.
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", path, err)
		}
		doc := string(raw)
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		docs++
		obj, ok := objyaml.Decode([]byte(doc))
		if !ok {
			var err error
			if obj, err = objyaml.DecodeJSONRoute([]byte(doc)); err != nil {
				return nil, fmt.Errorf("render %s: %w", path, err)
			}
		}
		u.Object = obj
	}
	if docs != 1 {
		return nil, fmt.Errorf("render %s: want exactly one object, got %d", path, docs)
	}
	if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
		return nil, fmt.Errorf("render %s: object needs apiVersion, kind and metadata.name", path)
	}
	return u, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
