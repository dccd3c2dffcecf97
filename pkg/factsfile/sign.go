package factsfile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// Signature is, on the header, an HMAC-SHA256 of every item of the file
// under a key the pipeline holds. The marks' digests catch accidents; a
// signature tells who wrote the file: whoever holds the key.
const Signature = "platform.kubevirt.io/facts-signature"

// MinKeyBytes is the shortest key accepted: a key is random bytes, as
// long as the hash.
const MinKeyBytes = 32

// ErrUnsigned says the file carries no signature.
var ErrUnsigned = errors.New("the facts file is not signed")

// Sign signs the items of a file written by Encode with key.
func Sign(list *unstructured.UnstructuredList, key []byte) error {
	if len(key) < MinKeyBytes {
		return fmt.Errorf("facts key: %d bytes, at least %d random bytes are needed", len(key), MinKeyBytes)
	}
	for i := range list.Items {
		if isHeader(&list.Items[i]) {
			ann := list.Items[i].GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[Signature] = sign(itemPointers(list.Items), key)
			list.Items[i].SetAnnotations(ann)
			return nil
		}
	}
	return fmt.Errorf("no facts header to sign")
}

// Verify checks the items' signature with key: nil when the file was
// signed with key and not changed since, ErrUnsigned when it holds no
// signature.
func Verify(items []*unstructured.Unstructured, key []byte) error {
	var got string
	for _, u := range items {
		if isHeader(withoutRuntimeAnnotations(u)) {
			got = u.GetAnnotations()[Signature]
		}
	}
	if got == "" {
		return ErrUnsigned
	}
	if !hmac.Equal([]byte(got), []byte(sign(items, key))) {
		return errors.New("the facts file's signature does not match the key: it was changed after it was signed, or signed with another key")
	}
	return nil
}

// sign is the signature of items: their content without the pipeline's
// bookkeeping and without the signature, in a fixed order.
func sign(items []*unstructured.Unstructured, key []byte) string {
	docs := make([]string, 0, len(items))
	for _, u := range items {
		b, _ := json.Marshal(canonical(u).Object) // the signature is not in it: see runtimeAnnotation
		docs = append(docs, string(b))
	}
	sort.Strings(docs)
	mac := hmac.New(sha256.New, key)
	for _, d := range docs {
		mac.Write([]byte(d))
		mac.Write([]byte{0})
	}
	return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
}

func itemPointers(items []unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// authored are the annotations whose value a render copies into what it
// writes: a JSON patch and the fields kept at their live value. From an
// unsigned file they would make its author the author of the output.
var authored = []string{annotations.Patch, annotations.IgnoreFields}

// Customizations names the objects of s that carry an annotation whose
// content the render would copy into its output, as "Kind ns/name
// (annotation)", sorted.
func (s Snapshot) Customizations() []string {
	var out []string
	for _, u := range s.Live {
		for _, a := range authored {
			if _, ok := u.GetAnnotations()[a]; ok {
				out = append(out, fmt.Sprintf("%s %s/%s (%s)", u.GetKind(), u.GetNamespace(), u.GetName(), a))
			}
		}
	}
	sort.Strings(out)
	return out
}
