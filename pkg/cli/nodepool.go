package cli

import (
	"fmt"
	"io"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodepool"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
)

// writeNodePool writes the ConfigMap a NodePool's spec.config takes, with
// how to reference it, and says on stderr what it holds and left out.
func writeNodePool(stdout, stderr io.Writer, ds []engine.Decision, namespace string) error {
	res, err := nodepool.Config(ds, namespace)
	if err != nil {
		return err
	}
	for _, o := range res.Objects {
		fmt.Fprintln(stderr, "note: in the NodePool config:", o)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintln(stderr, "note: left out:", sk)
	}
	if len(res.Objects) == 0 {
		fmt.Fprintln(stderr, "warning: no node configuration to hand to a NodePool (no node feature applies here)")
	}
	y, err := objyaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": res.ConfigMap.Name, "namespace": res.ConfigMap.Namespace, "labels": res.ConfigMap.Labels}, "data": res.ConfigMap.Data})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, `# Apply on the management cluster, in the NodePool's namespace, then reference it
# from each NodePool of this cluster (a change rolls the NodePool: Replace makes
# new nodes, InPlace drains and reboots them; spec.pausedUntil defers it):
#   kubectl -n %[1]s patch nodepool NAME --type=json -p '%[2]s'
# (a NodePool without spec.config: -p '[{"op":"add","path":"/spec/config","value":[{"name":"%[3]s"}]}]')
---
%[4]s`, res.ConfigMap.Namespace, nodepool.Patch(), nodepool.Name, y)
	return err
}
