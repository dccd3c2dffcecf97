package main

import (
	"fmt"
	"os/exec"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

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
	p("  debug:       http://%s/debug/health (also /debug/render, /debug/exclusions, /debug/tombstones)", debugAddr)
	p("")
	p("What it decided for each asset (render --output status):")
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
	p("  # What happened, and why")
	p(`  kubectl events -n openshift-cnv --for hyperconverged/kubevirt-hyperconverged`)
	p(`  curl -s http://%s/debug/health`, debugAddr)
	p(`  bin/virt-platform-autopilot render --kubeconfig %s --output status`, d.kubeconfig)
	return b.String()
}
