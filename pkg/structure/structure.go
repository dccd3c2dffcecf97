// Package structure reads, from a CRD's structural schema, how server-side
// apply merges each map and list of a kind: which maps are atomic (one
// owner, replaced whole) and which lists are granular (list-type map or
// set, merged element by element). A list without a list type is atomic in
// a CRD. The local drift verdict needs this to be exact: a key another
// manager adds to an atomic map is drift, because the next apply removes it.
//
// The schema itself is large; the controller's cache drops it and keeps
// only this summary, in a Store its transform fills.
package structure

import (
	"strconv"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// Item is the path token standing for any list element or map value.
const Item = "*"

// Structure of one version of a kind. The zero value is unknown: callers
// fall back to a lenient compare and let the server judge.
type Structure struct {
	Known bool
	// AtomicMaps and GranularLists hold schema paths (RFC 6901, Item for
	// list elements and map values).
	AtomicMaps map[string]bool
	// GranularLists maps each list-type map or set to its key fields
	// (none for a set). Below a field that preserves unknown fields and
	// declares nothing, the server deduces: maps granular, lists atomic,
	// which these defaults already say.
	GranularLists map[string][]string
	// FreeMaps holds maps of additionalProperties: their keys are data,
	// so the schema path of a value is Item.
	FreeMaps map[string]bool
}

// ListKeys returns the key fields of the granular list at schema path p,
// and whether it is granular.
func (s Structure) ListKeys(p jsonpointer.Pointer) ([]string, bool) {
	if !s.Known {
		return nil, false
	}
	k, ok := s.GranularLists[p.String()]
	return k, ok
}

// AtomicMap reports whether the map at schema path p is replaced whole.
func (s Structure) AtomicMap(p jsonpointer.Pointer) bool {
	return s.Known && s.AtomicMaps[p.String()]
}

// AtomicList reports whether the list at schema path p is replaced whole
// (false when the structure is unknown).
func (s Structure) AtomicList(p jsonpointer.Pointer) bool {
	_, granular := s.GranularLists[p.String()]
	return s.Known && !granular
}

// Key is the schema path of map key k below the schema path sp: Item in a
// map of additional properties, else the key itself.
func (s Structure) Key(sp jsonpointer.Pointer, k string) jsonpointer.Pointer {
	if s.Known && s.FreeMaps[sp.String()] {
		return Child(sp, Item)
	}
	return Child(sp, k)
}

// Path turns a concrete pointer into doc into its schema path.
func (s Structure) Path(doc any, p jsonpointer.Pointer) jsonpointer.Pointer {
	var sp jsonpointer.Pointer
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			sp, cur = s.Key(sp, tok), c[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			sp = Child(sp, Item)
			if i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		default:
			sp, cur = Child(sp, tok), nil
		}
	}
	return sp
}

// InsideAtomic reports whether the concrete pointer p into doc passes
// through an atomic map or list (one owner for the whole value). With an
// unknown structure every list counts as atomic: the safe assumption.
func (s Structure) InsideAtomic(doc any, p jsonpointer.Pointer) bool {
	var sp jsonpointer.Pointer
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			if s.AtomicMap(sp) {
				return true
			}
			sp, cur = s.Key(sp, tok), c[tok]
		case []any:
			if !s.Known || s.AtomicList(sp) {
				return true
			}
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			sp, cur = Child(sp, Item), c[i]
		default:
			return false
		}
	}
	return false
}

// Child appends tok to p without sharing p's backing array.
func Child(p jsonpointer.Pointer, tok string) jsonpointer.Pointer {
	return append(append(jsonpointer.Pointer{}, p...), tok)
}

// FromCRD reads the structure of one version of crd (the storage version
// when version is "").
func FromCRD(crd *apiextensionsv1.CustomResourceDefinition, version string) Structure {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if (version == "" && v.Storage) || v.Name == version {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return Structure{}
			}
			s := Structure{Known: true, AtomicMaps: map[string]bool{}, GranularLists: map[string][]string{}, FreeMaps: map[string]bool{}}
			walk(v.Schema.OpenAPIV3Schema, nil, &s)
			return s
		}
	}
	return Structure{}
}

func walk(p *apiextensionsv1.JSONSchemaProps, at jsonpointer.Pointer, s *Structure) {
	if len(at) == 1 && at[0] == "metadata" {
		return // object metadata merges as ObjectMeta, not per the CRD
	}
	child := func(tok string) jsonpointer.Pointer { return Child(at, tok) }
	switch p.Type {
	case "array":
		if p.XListType != nil && (*p.XListType == "map" || *p.XListType == "set") {
			s.GranularLists[at.String()] = append([]string{}, p.XListMapKeys...)
			if p.Items != nil && p.Items.Schema != nil {
				walk(p.Items.Schema, child(Item), s)
			}
		}
	case "object", "":
		if p.XMapType != nil && *p.XMapType == "atomic" {
			s.AtomicMaps[at.String()] = true
			return
		}
		for name, prop := range p.Properties {
			walk(&prop, child(name), s)
		}
		if p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil {
			s.FreeMaps[at.String()] = true
			walk(p.AdditionalProperties.Schema, child(Item), s)
		}
	}
}

// Store keeps the Structure of every version of the CRDs it is given,
// by CRD name, so the schemas themselves can be dropped. Safe for
// concurrent use.
type Store struct {
	mu sync.Mutex
	m  map[string]map[string]Structure
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{m: map[string]map[string]Structure{}} }

// Put records crd's structure per version. A CRD without any schema (a
// copy already trimmed) changes nothing.
func (s *Store) Put(crd *apiextensionsv1.CustomResourceDefinition) {
	byVersion := map[string]Structure{}
	for _, v := range crd.Spec.Versions {
		if st := FromCRD(crd, v.Name); st.Known {
			byVersion[v.Name] = st
		}
	}
	if len(byVersion) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[crd.Name] = byVersion
}

// Snapshot is the structures recorded so far, by CRD name then version;
// its values are shared and must not be changed.
func (s *Store) Snapshot() map[string]map[string]Structure {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]Structure, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}
