package shipped

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
)

// Opponent names, in a fight's list of field managers, a writer that
// applies under this autopilot's own field manager name.
const Opponent = annotations.FieldManager + " (another writer under this autopilot's field manager name, most likely the autopilot OpenShift Virtualization ships or a second copy of this one; or a person who removed the " + annotations.Asset + " stamp)"

// assetPointer is the asset stamp every object this autopilot applies
// carries (engine.Evaluator stamps it on every desired object).
var assetPointer = jsonpointer.Pointer{"metadata", "annotations", annotations.Asset}

// WroteLast reports whether live's last server-side apply under this
// autopilot's field manager name was not this autopilot's: the entry
// exists but no longer owns the asset stamp. One manager name has one
// field set, so another writer's apply under it replaces this
// autopilot's set, and the shipped autopilot never writes the stamp.
func WroteLast(live *unstructured.Unstructured) bool {
	return live != nil && managedfields.Applied(live, annotations.FieldManager) &&
		!managedfields.Holds(live, assetPointer, annotations.FieldManager)
}

// NameOpponents returns opponents with the writer under this
// autopilot's name added when live shows one (WroteLast).
func NameOpponents(live *unstructured.Unstructured, opponents []string) []string {
	if !WroteLast(live) {
		return opponents
	}
	for _, o := range opponents {
		if strings.HasPrefix(o, annotations.FieldManager+" ") {
			return opponents
		}
	}
	return append(opponents, Opponent)
}
