package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// RemediationKinds are the kinds whose write changes how nodes are
// remediated (fenced, rebooted by another operator): as costly to get
// wrong as a reboot, so their fact-driven writes settle too.
var RemediationKinds = map[string]bool{"NodeHealthCheck": true, "StorageBasedRemediationConfig": true}

// Settles reports whether a write of the asset's object must wait for the
// facts it renders from to settle: it reboots a pool or changes
// remediation.
func Settles(a *catalog.Asset, kind string) bool {
	return a.Disruption == catalog.DisruptionReboot || catalog.RebootKinds[kind] || RemediationKinds[kind]
}

// FactPrint is the print of the derived facts an asset renders from, and
// only those: the facts its template reads (reads: the fields of
// .Hardware and .Topology, the functions that read the cluster's storage,
// CRDs and swap), the results of its conditions on derived facts
// (hardware, topology, CRD fields, storage classes, the kubelet's unit),
// and the objects it declares under reads (another operator's object and
// status: a fence template whose BMC check flips). A fact it does not
// read (a node joining, a label of another pool, hardware no template
// reads) does not change it, so it neither holds nor counts the asset's
// writes. A person's intent (the HCO) and the autopilot's version are not
// in it: a change of those is never held. An asset that reads no fact
// prints settle.NoFacts.
func FactPrint(a *catalog.Asset, rc *rendercontext.RenderContext, reads render.Reads) (string, error) {
	facts := map[string]any{}
	if names, whole := reads.Under("Hardware"); whole || len(names) > 0 {
		hw, err := rc.HardwareFor(a.Params)
		if err != nil {
			return "", err
		}
		facts["hardware"] = fieldsOf(hw, names, whole)
	}
	if names, whole := reads.Under("Topology"); whole || len(names) > 0 {
		facts["topology"] = fieldsOf(rc.Topology, names, whole)
	}
	for fn, fact := range factFuncs {
		if reads.Funcs[fn] {
			facts[fact] = factOf(fact, rc)
		}
	}
	conds := map[string]any{}
	for _, c := range a.Conditions {
		if Intent(c) || c.Type == catalog.CondImage {
			continue // a person's choice, or the autopilot's own version
		}
		holds, err := conditionHolds(a, c, rc)
		if err != nil {
			conds[c.String()] = "unknown"
			continue
		}
		conds[c.String()] = holds
	}
	if len(conds) > 0 {
		facts["conditions"] = conds
	}
	if len(a.Reads) > 0 {
		objs := map[string]any{}
		for _, r := range a.Reads {
			k := rendercontext.KeyOf(r)
			if rc.ObjectErrs[k] != nil {
				// Unknown: the render fails if it needs the object; if it
				// does not (a switch off), the asset must not fail for it.
				objs[k.String()] = "unreadable"
				continue
			}
			objs[k.String()] = stableContent(rc.Objects[k])
		}
		facts["reads"] = objs
	}
	if len(facts) == 0 {
		return settle.NoFacts, nil
	}
	h, err := shortHash(facts)
	return settle.Scheme + h, err
}

// factFuncs name the template functions that read derived facts, and the
// fact each reads (factOf). lookup reads only what the asset declares
// under reads, which the print holds already.
var factFuncs = map[string]string{
	"swapOnEveryVMNode":      "swap",
	"storageProfiles":        "storage",
	"storageClassesOffering": "storage",
	"defaultStorageClass":    "storage",
	"storageClassAnnotation": "storage",
	"crdEnum":                "crds",
	"crdEnumFirst":           "crds",
	"crdHasField":            "crds",
	"crdKnown":               "crds",
}

// factOf is the value of one fact a template function reads.
func factOf(fact string, rc *rendercontext.RenderContext) any {
	switch fact {
	case "swap":
		// What the function answers, not the pools' node counts.
		return rc.SwapOnEveryVMNode()
	case "storage":
		out := map[string]any{}
		for _, u := range rc.StorageClasses {
			out["class/"+u.GetName()] = map[string]any{"content": stableContent(u), "annotations": u.GetAnnotations()}
		}
		for _, u := range rc.StorageProfiles {
			out["profile/"+u.GetName()] = stableContent(u)
		}
		if rc.StorageClassesErr != nil || rc.StorageProfilesErr != nil {
			out["unreadable"] = true
		}
		return out
	case "crds":
		// A schema changes with the CRD's generation (spec), never with
		// its status.
		out := map[string]int64{}
		for name, crd := range rc.CRDs {
			if crd != nil {
				out[name] = crd.Generation
			}
		}
		return out
	}
	return nil
}

// fieldsOf is v's fields named (Go names), or all of them when whole.
func fieldsOf(v any, names []string, whole bool) any {
	if whole {
		return v
	}
	rv := reflect.ValueOf(v)
	out := map[string]any{}
	for _, n := range names {
		f := rv.FieldByName(n)
		if !f.IsValid() {
			// A method (Detected, Bool) reads any field: all of them.
			return v
		}
		out[n] = f.Interface()
	}
	return out
}

// shortHash is a short hash of v's JSON (maps in key order): the prints
// stamped on objects.
func shortHash(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// objectPrint is a short hash of the object an asset renders (the
// template's output, before a person's patch and mask): what the facts
// make of it, compared by the settle rule.
func objectPrint(u *unstructured.Unstructured) string {
	h, _ := shortHash(u.Object) // content decoded from JSON always encodes
	return h
}

// SettlePrint is what the settle rule judges d's write by: the facts its
// object renders from and the object they render (pkg/settle).
func (d *Decision) SettlePrint() settle.Print {
	p := settle.Print{Facts: d.FactPrint, Object: d.ObjectPrint, Intent: d.IntentPrint}
	if p.Facts == settle.NoFacts {
		p.Intent = "" // no write of it is fact-driven: nothing to tell apart
	}
	return p
}

// IntentPrint is the print of what a person chose that an asset renders
// from, the complement of FactPrint, as the template reads it (its parse
// tree): the HCO paths it digs, the switches, feature gates, storage
// class annotations and exclusions it asks for by name (their values as
// understood), its conditions on a person's intent. Stamped with the
// facts (settle.Print), it tells from the object alone whether a pending
// write carries a person's change, after a restart as before it. It reads
// nothing else: a change it missed is judged as the facts' (held, charged:
// the safe side), while one it invented would release a held write, so a
// read it cannot name (.HCO passed whole) counts by its presence only.
func IntentPrint(a *catalog.Asset, rc *rendercontext.RenderContext, reads render.Reads) (string, error) {
	in := map[string]any{}
	if reads.Field("HCO") {
		in[".HCO"] = len(rc.HCO) > 0
	}
	for _, p := range reads.HCOPaths {
		v, _, _ := unstructured.NestedFieldNoCopy(rc.HCO, p...)
		in["dig "+strings.Join(p, ".")] = v
	}
	for _, args := range reads.Args["switch"] {
		on, err := rc.Switch(args[0])
		in["switch "+args[0]] = fmt.Sprint(on, err != nil)
	}
	for _, args := range reads.Args["featureGate"] {
		in["featureGate "+args[0]] = rc.FeatureGateEnabled(args[0])
	}
	for _, args := range reads.Args["storageClassAnnotation"] {
		in["storageClassAnnotation "+args[0]], _ = rc.HCOAnnotation(args[0])
	}
	for _, args := range reads.Args["excluded"] {
		if len(args) == 3 {
			_, hit := rc.Exclusions.Match(args[0], args[1], args[2])
			in["excluded "+strings.Join(args, " ")] = hit
		}
	}
	for _, c := range a.Conditions {
		if Intent(c) {
			holds, err := conditionHolds(a, c, rc)
			in["condition "+c.String()] = holds && err == nil
		}
	}
	if len(in) == 0 {
		return "none", nil
	}
	return shortHash(in)
}

// volatile are the fields that change without the object's meaning
// changing: a status heartbeat must not restart a settle period, or a
// write would wait for ever.
var volatile = map[string]bool{
	"lastTransitionTime": true, "lastHeartbeatTime": true, "lastUpdateTime": true,
	"lastProbeTime": true, "observedGeneration": true,
}

// stableContent is u's spec and status (and any other top-level content)
// without metadata or volatile fields; nil for an absent object.
func stableContent(u *unstructured.Unstructured) any {
	if u == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" {
			out[k] = withoutVolatile(v)
		}
	}
	return out
}

func withoutVolatile(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if !volatile[k] {
				out[k] = withoutVolatile(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutVolatile(e)
		}
		return out
	}
	return v
}
