package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// statusSummary is the status table folded to what a newcomer reads on
// one screen: the count per status, the assets it writes, and every asset
// that neither converged nor was excluded, with its reason. raw is
// render --output json --show-excluded.
func statusSummary(raw []byte) string {
	var entries []preview.Entry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return fmt.Sprintf("  (the status could not be read: %v)\n", err)
	}
	count, names := map[string]int{}, map[string][]string{}
	var order []string
	var b strings.Builder
	for _, e := range entries {
		if count[e.Status] == 0 {
			order = append(order, e.Status)
		}
		count[e.Status]++
		names[e.Status] = append(names[e.Status], e.Asset)
	}
	var counts []string
	for _, st := range order {
		counts = append(counts, fmt.Sprintf("%d %s", count[st], st))
	}
	fmt.Fprintf(&b, "  %d assets: %s\n", len(entries), strings.Join(counts, ", "))
	fmt.Fprintf(&b, "  INCLUDED (written and kept converged): %s\n", strings.Join(names["INCLUDED"], ", "))
	for _, e := range entries {
		if e.Status == "INCLUDED" || e.Status == "EXCLUDED" {
			continue
		}
		fmt.Fprintf(&b, "  %s %s: %s\n", e.Status, e.Asset, e.Reason)
	}
	return b.String()
}

// summary is what a newcomer reads: where the cluster is, what converged,
// and one command per annotation with what to look at.
func summary(d *demo, status string, converged bool, metrics, probes, debugAddr string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("")
	if converged {
		p("The autopilot converged a fresh cluster (a real kube-apiserver and etcd on loopback).")
	} else {
		p("The autopilot runs on a fresh cluster (a real kube-apiserver and etcd on loopback), but after %s", convergeTimeout)
		p("something is still left to change: see the REASON column below and the log.")
	}
	p("")
	p("  kubeconfig:  %s", d.kubeconfig)
	p("  logs:        %s", d.logPath)
	p("  metrics:     http://%s/metrics    probes: http://%s/readyz", metrics, probes)
	p("  debug:       http://%s/debug/ (lists its pages: health, render, features, ...)", debugAddr)
	p("")
	p("What it decided (the full table: bin/virt-platform-autopilot render --kubeconfig %s --output status):", d.kubeconfig)
	p("")
	b.WriteString(status)
	p("")
	p("Kinds whose CRD is not installed here show MISSING-DEPENDENCY; the rest still converged.")
	p("Try the annotations (in another terminal; each object changes within a second):")
	p("")
	if _, err := exec.LookPath("kubectl"); err != nil {
		p("  (kubectl is not installed: get it from https://kubernetes.io/docs/tasks/tools/ or 'apt-get install kubectl')")
		p("")
	}
	const hco = "-n openshift-cnv hyperconverged kubevirt-hyperconverged"
	const psi = "machineconfig 99-worker-kubevirt-psi-karg"
	p("  export KUBECONFIG=%s", d.kubeconfig)
	p("")
	p("  # Drift: change a managed field; the autopilot puts it back (log: action=correct, Event DriftCorrected)")
	p(`  kubectl patch %s --type merge -p '{"spec":{"kernelArguments":["psi=0"]}}'`, psi)
	p(`  kubectl get %s -o jsonpath='{.spec.kernelArguments}{"\n"}'          # ["psi=1"] again`, psi)
	p("")
	p("  # patch: your change to the baseline, kept (the HCO's golden migration limit 5 -> 10)")
	p(`  kubectl annotate %s platform.kubevirt.io/patch='[{"op":"replace","path":"/spec/virtualization/liveMigrationConfig/parallelMigrationsPerCluster","value":10}]'`, hco)
	p(`  kubectl get %s -o jsonpath='{.spec.virtualization.liveMigrationConfig.parallelMigrationsPerCluster}{"\n"}'   # 10`, hco)
	p("")
	p("  # yield-to: fields a GitOps or policy controller owns are left to it (argocd-controller is in the default list)")
	p(`  kubectl patch %s --field-manager=argocd-controller --type merge -p '{"spec":{"kernelArguments":["psi=1","split_lock_detect=warn"]}}'`, psi)
	p(`  kubectl get %s -o jsonpath='{.spec.kernelArguments}{"\n"}'          # stays: deferred to its owner (Event Deferred)`, psi)
	p("")
	p("  # ignore-fields: a field the autopilot leaves to you")
	p(`  kubectl annotate %s platform.kubevirt.io/ignore-fields=/spec/kernelArguments`, psi)
	p(`  kubectl patch %s --type merge -p '{"spec":{"kernelArguments":["psi=0"]}}'   # stays psi=0`, psi)
	p("")
	p("  # unmanaged: the autopilot never touches (nor deletes) this object again")
	p(`  kubectl annotate machineconfig 90-worker-kubevirt-swap platform.kubevirt.io/mode=unmanaged`)
	p("")
	p("  # disabled-resources: never create this object (root exclusion; nothing is deleted)")
	p(`  kubectl annotate %s platform.kubevirt.io/disabled-resources=MachineConfig/99-worker-kubevirt-numa`, hco)
	p(`  kubectl delete machineconfig 99-worker-kubevirt-numa && sleep 2 && kubectl get machineconfigs   # not re-created`)
	p("")
	p("  # An opt-in switch: PCI passthrough (worker-1 has an NFD-labelled GPU); \"false\" removes it again")
	p(`  kubectl annotate %s platform.kubevirt.io/enable-pci-passthrough=true`, hco)
	p(`  kubectl get machineconfig 50-worker-kubevirt-iommu -o jsonpath='{.spec.kernelArguments}{"\n"}'`)
	p("")
	p("  # disruption-window: writes that reboot a pool wait for it; outside it they are Staged and go together when it opens")
	p(`  kubectl annotate %s platform.kubevirt.io/disruption-window='%s'`, hco, closedWindow(time.Now()))
	p(`  kubectl annotate %s --overwrite platform.kubevirt.io/enable-pci-passthrough=false   # its MachineConfig's deletion reboots the pool: Staged`, hco)
	p(`  kubectl annotate %s platform.kubevirt.io/disruption-window-                        # no window: any time, so it goes now`, hco)
	p("")
	p("  # autopilot: pause everything, compare only, or manage again")
	p(`  kubectl annotate %s platform.kubevirt.io/autopilot=false                  # paused: nothing written or deleted`, hco)
	p(`  kubectl annotate %s --overwrite platform.kubevirt.io/autopilot=report-only  # compared and reported (Event Drifted), never written`, hco)
	p(`  kubectl annotate %s --overwrite platform.kubevirt.io/autopilot=true         # managing everything again`, hco)
	p("")
	p("  # What happened, and why")
	p(`  kubectl events -n openshift-cnv --for hyperconverged/kubevirt-hyperconverged`)
	p(`  curl -s http://%s/debug/health`, debugAddr)
	p(`  bin/virt-platform-autopilot render --kubeconfig %s --output status`, d.kubeconfig)
	return b.String()
}

// closedWindow is a one-hour weekly window that opens twelve hours after
// now: closed while the demo's commands run, whenever that is.
func closedWindow(now time.Time) string {
	start := now.UTC().Add(12 * time.Hour)
	return fmt.Sprintf("%s %02d:00-%02d:00 UTC", start.Format("Mon"), start.Hour(), (start.Hour()+1)%24)
}
