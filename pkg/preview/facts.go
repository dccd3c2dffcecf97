// Package preview shows what the autopilot would do, without doing it: the
// render CLI and the debug endpoints build on it. It never decides anything
// itself; every decision comes from the engine walk, as in the controller.
package preview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Files name the offline inputs of a render.
type Files struct {
	HCO   string   // the HyperConverged object (required)
	Nodes string   // Nodes (a List or YAML documents), optional
	CRDs  []string // CRD files or folders, optional; without them every kind counts as installed
	// Objects are other cluster objects, optional: StorageProfiles,
	// StorageClasses, an Infrastructure, and the objects assets read
	// (Reads: anything else is an error, it would be ignored).
	Objects string
	Reads   []rendercontext.ObjectKey
	// Namespace overrides the HCO's namespace when set.
	Namespace string
}

// LoadFacts reads offline facts from files.
func LoadFacts(f Files) (rendercontext.Facts, bool, error) {
	var facts rendercontext.Facts
	docs, err := ReadObjects(f.HCO)
	if err != nil {
		return facts, false, fmt.Errorf("--hco-file: %w", err)
	}
	for _, d := range docs {
		if d.GetKind() == rendercontext.HCOKind {
			if facts.HCO != nil {
				return facts, false, fmt.Errorf("--hco-file: %s holds more than one HyperConverged", f.HCO)
			}
			facts.HCO = d
		}
	}
	if facts.HCO == nil {
		return facts, false, fmt.Errorf("--hco-file: %s holds no HyperConverged object", f.HCO)
	}
	facts.Namespace = facts.HCO.GetNamespace()
	if f.Namespace != "" {
		facts.Namespace = f.Namespace
	}
	if facts.Namespace == "" {
		facts.Namespace = "openshift-cnv"
	}
	if f.Nodes != "" {
		nodes, lists, err := readDocsAndLists(f.Nodes)
		if err != nil {
			return facts, false, fmt.Errorf("--nodes-file: %w", err)
		}
		for _, u := range nodes {
			if u.GetKind() != "Node" {
				return facts, false, fmt.Errorf("--nodes-file %s: holds a %s (%s); want Nodes, as a List or YAML documents", f.Nodes, u.GetKind(), u.GetName())
			}
			var n corev1.Node
			if err := fromUnstructured(u, &n); err != nil {
				return facts, false, fmt.Errorf("--nodes-file: %w", err)
			}
			facts.Nodes = append(facts.Nodes, n)
		}
		// An empty List is a cluster without nodes; an empty file is a mistake.
		if len(facts.Nodes) == 0 && lists == 0 {
			return facts, false, fmt.Errorf("--nodes-file %s: holds no Node (e.g. kubectl get nodes -o yaml > nodes.yaml)", f.Nodes)
		}
	}
	for _, p := range f.CRDs {
		before := len(facts.CRDs)
		files, err := yamlFiles(p)
		if err != nil {
			return facts, false, fmt.Errorf("--crds: %w", err)
		}
		for _, file := range files {
			docs, err := ReadObjects(file)
			if err != nil {
				return facts, false, fmt.Errorf("--crds: %w", err)
			}
			for _, u := range docs {
				if u.GetKind() != "CustomResourceDefinition" {
					continue
				}
				var crd apiextensionsv1.CustomResourceDefinition
				if err := fromUnstructured(u, &crd); err != nil {
					return facts, false, fmt.Errorf("--crds %s: %w", file, err)
				}
				facts.CRDs = append(facts.CRDs, crd)
			}
		}
		if len(facts.CRDs) == before {
			return facts, false, fmt.Errorf("--crds %s: holds no CustomResourceDefinition (e.g. kubectl get crd -o yaml > crds.yaml)", p)
		}
	}
	// Operand images as the controller reads them: from the environment.
	facts.Images = rendercontext.ImagesFromEnv(os.Environ())
	if err := loadObjects(&facts, f); err != nil {
		return facts, false, err
	}
	return facts, len(f.CRDs) == 0, nil
}

// loadObjects reads --objects-file: the facts and looked-up objects a
// cluster would offer. Every declared read not in the file is absent, as
// on a cluster without it.
func loadObjects(facts *rendercontext.Facts, f Files) error {
	if f.Objects == "" {
		return nil
	}
	facts.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
	declared := map[rendercontext.ObjectKey]bool{}
	for _, k := range f.Reads {
		facts.Objects[k] = nil
		declared[k] = true
	}
	docs, err := ReadObjects(f.Objects)
	if err != nil {
		return fmt.Errorf("--objects-file: %w", err)
	}
	for _, u := range docs {
		gvk := u.GroupVersionKind()
		k := rendercontext.ObjectKey{GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName()}
		switch {
		case gvk == rendercontext.StorageProfileGVK:
			facts.StorageProfiles = append(facts.StorageProfiles, u)
		case gvk == rendercontext.StorageClassGVK:
			facts.StorageClasses = append(facts.StorageClasses, u)
		case gvk == rendercontext.InfrastructureGVK && u.GetName() == "cluster":
			facts.Infrastructure = u
		case gvk == rendercontext.SchedulerGVK && u.GetName() == "cluster":
			facts.Scheduler = u
		case gvk == rendercontext.PoolGVK:
			// Which pools exist and which nodes each holds decide which
			// pools an object reaches (custom pools take worker's
			// MachineConfigs), as the controller reads them.
			facts.Pools = append(facts.Pools, u)
		case rendercontext.PeerKinds[gvk] != "":
			// Another KubeletConfig or NodeHealthCheck decides whether the
			// autopilot's clashes with it (engine.Clash).
			if facts.Peers == nil {
				facts.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{}
			}
			facts.Peers[gvk] = append(facts.Peers[gvk], u)
		case declared[k]:
			facts.Objects[k] = u
		default:
			return fmt.Errorf("--objects-file %s: %s %s is neither a fact (StorageProfile, StorageClass, Infrastructure or Scheduler cluster, MachineConfigPool, KubeletConfig, NodeHealthCheck) nor an object an asset reads", f.Objects, gvk.Kind, k)
		}
	}
	return nil
}

func yamlFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".json")) {
			out = append(out, path)
		}
		return err
	})
	return out, err
}

// ReadObjects reads YAML or JSON documents; Lists are flattened.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	docs, _, err := readDocsAndLists(path)
	return docs, err
}

// readDocsAndLists is ReadObjects that also counts the Lists it flattened.
func readDocsAndLists(path string) (out []*unstructured.Unstructured, lists int, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for n := 1; ; n++ {
		chunk, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, lists, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		if trimmed := bytes.TrimSpace(chunk); len(trimmed) > 0 && trimmed[0] == '{' {
			// JSON: one object, or a stream of them (kubectl get -o json,
			// NDJSON), each read whole; what is not JSON (a YAML flow
			// mapping) is read as YAML below.
			var docs [][]byte
			if eachJSON(chunk, func(doc []byte) error { docs = append(docs, doc); return nil }) == nil {
				for _, doc := range docs {
					if out, lists, err = appendDoc(out, lists, path, doc); err != nil {
						return nil, 0, err
					}
				}
				continue
			}
		}
		// Strict YAML: a key twice in one document is two objects run
		// together (files concatenated without a "---" line), never one of
		// them silently dropped.
		doc, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: document %d: %w (two objects concatenated without a '---' line between them?)", path, n, err)
		}
		if out, lists, err = appendDoc(out, lists, path, doc); err != nil {
			return nil, 0, err
		}
	}
}

// eachJSON calls f with each JSON value of a stream.
func eachJSON(raw []byte, f func([]byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := f(doc); err != nil {
			return err
		}
	}
}

// appendDoc adds the object of one JSON document to out, a List's items
// item by item (lists counts the Lists).
func appendDoc(out []*unstructured.Unstructured, lists int, path string, doc []byte) ([]*unstructured.Unstructured, int, error) {
	if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "null" {
		return out, lists, nil
	}
	// Through UnmarshalJSON so integers stay int64, as in the cluster.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(doc); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case !u.IsList() && strings.HasSuffix(u.GetKind(), "List"):
		return out, lists + 1, nil // an empty List (items: null)
	case u.IsList():
		list, err := u.ToList()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		return out, lists + 1, nil
	}
	return append(out, u), lists, nil
}

// fromUnstructured goes through JSON and sigs.k8s.io/yaml, which reads a
// hand-written file's unquoted number or boolean into a string field (a
// label "zone: 1") as kubectl does.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	js, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.Unmarshal(js, into)
}
