package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// faultSpecs run last, on a converged cluster with the HCO in place.
func faultSpecs(ctx context.Context) {
	revertPSI := func() {
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
	}
	psiConverged := func() { Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"})) }

	It("retries a burst of 500 and 429 answers with backoff, no hot loop, and converges after", func() {
		psiConverged()
		requests.fault.Store(http.StatusInternalServerError)
		mark := requests.mark()
		revertPSI()
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Failed))
		// A bounded observation window, not a synchronisation sleep.
		Consistently(mgrDone).WithTimeout(4 * time.Second).ShouldNot(BeClosed())
		requests.fault.Store(http.StatusTooManyRequests)
		Consistently(mgrDone).WithTimeout(3 * time.Second).ShouldNot(BeClosed())
		n := len(requests.since(mark))
		requests.fault.Store(0)
		// Per-asset backoff (1s, 2s, 4s...) and client-go's Retry-After
		// pacing: a handful of requests in 7 seconds, not hundreds.
		Expect(n).To(And(BeNumerically(">", 0), BeNumerically("<=", 30)), "requests during the fault: %d", n)
		psiConverged()
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})

	It("keeps running through a kube-apiserver restart and converges after, without duplicate writes", func() {
		psiConverged()
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
		mark := requests.mark()
		Expect(testenv.StopAPIServer(testEnv)).To(Succeed())
		Consistently(mgrDone).WithTimeout(3 * time.Second).ShouldNot(BeClosed())
		Expect(testenv.StartAPIServer(testEnv)).To(Succeed())

		rv := poke()
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).WithTimeout(60 * time.Second).Should(Equal(rv))
		Expect(writes(requests.since(mark))).To(BeEmpty(), "no duplicate writes after the restart")
		revertPSI()
		psiConverged()
	})

	It("stays up, leading, while the API server is unreachable longer than controller-runtime's lease allows, and converges after, without duplicate writes", func() {
		installLeaderElectionRBAC(ctx)
		stopManager()
		u, err := url.Parse(cfg.Host)
		Expect(err).NotTo(HaveOccurred())
		proxy := newTCPProxy(u.Host)
		DeferCleanup(proxy.close)
		log := &requestLog{}
		// As deployed: leader election, with the lease's default durations.
		r := startReplica(replicaOptions{log: log, host: "https://" + proxy.addr, leaderElect: true})
		rec = r.rec
		DeferCleanup(func() {
			r.stop()
			startManager()
		})
		psiConverged()
		Eventually(func() string { return status("psi-enable").ObservedResourceVersion }).ShouldNot(BeEmpty())
		// No Infrastructure: a highly available cluster's lease, as the
		// holder wrote it (openshift/library-go LeaderElectionDefaulting).
		lease := &coordinationv1.Lease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "virt-platform-autopilot.kubevirt.io"}, lease)).To(Succeed())
		Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(Equal(int32(137))))
		mark := log.mark()

		// Longer than controller-runtime's renew deadline (10s): with its
		// defaults the leader would give up and the process exit.
		Eventually(func() bool { return !r.rec.Snapshot().Health.LastReconcile.IsZero() }).Should(BeTrue(), "it leads")
		proxy.down()
		Consistently(r.done).WithTimeout(15 * time.Second).ShouldNot(BeClosed())
		proxy.up()

		// After reconnecting (relist, rewatch), a reconcile with no drift writes nothing.
		rv := poke()
		Eventually(func() string { return r.rec.Snapshot().Health.HCOResourceVersion }).WithTimeout(60 * time.Second).Should(Equal(rv))
		Expect(leaseAside(writes(log.since(mark)))).To(BeEmpty(), "no duplicate writes after the outage")
		revertPSI()
		psiConverged()
	})

	It("pauses an asset whose CRD is deleted, and starts it again when the CRD is re-created, writing once", func() {
		const kdCRD = "kubedeschedulers.operator.openshift.io"
		removeCRD(ctx, kdCRD)
		// Wait until the reconciler has dropped the kind's watch, so the
		// re-installed CRD really gets a fresh informer (a reconcile that
		// only sees the CRD come back keeps the old one).
		Eventually(func() []string { return rec.Snapshot().Health.Watched }).Should(Not(ContainElement(ContainSubstring("KubeDescheduler"))))
		installCRD(ctx, deschedulerCRD("4-21"))
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		removeCRD(ctx, kdCRD)
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.MissingDependency))
		revertPSI()
		psiConverged()

		mark := requests.mark()
		installCRD(ctx, deschedulerCRD("4-21"))
		Eventually(outcomeOf("descheduler-loadaware")).WithTimeout(60 * time.Second).Should(Equal(engine.Unchanged))
		var kdWrites int
		for _, w := range writes(requests.since(mark)) {
			if filepath.Base(filepath.Dir(w)) == "kubedeschedulers" || filepath.Base(w) == "kubedeschedulers" {
				kdWrites++
			}
		}
		Expect(kdWrites).To(Equal(1), "one write per object: %v", writes(requests.since(mark)))
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "") })
		Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
	})

	It("with two replicas and leader election, only the leader writes, and failover converges", func() {
		installLeaderElectionRBAC(ctx)
		stopManager()
		logA, logB := &requestLog{}, &requestLog{}
		a := startReplica(replicaOptions{log: logA, leaderElect: true, lease: quickHandover})
		b := startReplica(replicaOptions{log: logB, leaderElect: true, lease: quickHandover})
		DeferCleanup(func() {
			a.stop()
			b.stop()
			startManager()
		})
		var leader, follower replica
		var followerLog *requestLog
		Eventually(func() bool {
			switch {
			case !a.rec.Snapshot().Health.LastReconcile.IsZero():
				leader, follower, followerLog = a, b, logB
			case !b.rec.Snapshot().Health.LastReconcile.IsZero():
				leader, follower, followerLog = b, a, logA
			default:
				return false
			}
			return true
		}).WithTimeout(60 * time.Second).Should(BeTrue())
		revertPSI()
		psiConverged()
		Expect(follower.rec.Snapshot().Health.LastReconcile.IsZero()).To(BeTrue(), "the follower does not reconcile")
		Expect(writes(followerLog.since(0))).To(BeEmpty(), "the follower writes nothing")

		leader.stop() // releases the lease on the way out
		Eventually(func() bool { return !follower.rec.Snapshot().Health.LastReconcile.IsZero() }).WithTimeout(60 * time.Second).Should(BeTrue())
		rec = follower.rec
		revertPSI()
		psiConverged()
	})

	It("restarts while throttled and converges once the fight is over", func() {
		psiConverged()
		// The opponent reverts every correction until writes are paused.
		Eventually(func() engine.Outcome {
			if o := status("psi-enable").Outcome; o == engine.Throttled {
				return o
			}
			if args := kernelArgs(psiMC); len(args) == 1 && args[0] == "psi=1" {
				update(mcGVK, "", psiMC, "opponent-operator", func(u *unstructured.Unstructured) {
					Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
				})
			}
			return status("psi-enable").Outcome
		}).WithTimeout(60 * time.Second).Should(Equal(engine.Throttled))
		stopManager()
		mark := requests.mark()
		startManager()
		// A new process starts with a full budget: the correction is made.
		psiConverged()
		n := 0
		for _, w := range writes(requests.since(mark)) {
			if filepath.Base(w) == psiMC {
				n++
			}
		}
		Expect(n).To(Equal(1), "one corrective write after the restart")
	})
}

// leaseAside drops the leader's lease renewals from reqs.
func leaseAside(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if !strings.Contains(r, "/apis/coordination.k8s.io/v1/namespaces/"+operatorNamespace+"/leases/") {
			out = append(out, r)
		}
	}
	return out
}

// quickHandover: a standby takes a released lease within one retry
// period; 2s keeps a failover spec short. The lease's duration and renew
// deadline stay the cluster's defaults.
var quickHandover = app.LeaseTimings{RetryPeriod: 2 * time.Second}

func installLeaderElectionRBAC(ctx context.Context) {
	installNamespacedRBAC(ctx, "leader_election_role.yaml")
}

// installNamespacedRBAC creates a Role and its RoleBinding from
// config/rbac/file in the autopilot's namespace, as kustomize places them.
func installNamespacedRBAC(ctx context.Context, file string) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", file))
	Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(raw), "\n---\n")
	Expect(docs).To(HaveLen(2))
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	Expect(yaml.Unmarshal([]byte(docs[0]), role)).To(Succeed())
	Expect(yaml.Unmarshal([]byte(docs[1]), binding)).To(Succeed())
	// As kustomize places them (config/default): the autopilot's namespace.
	role.Namespace, binding.Namespace = operatorNamespace, operatorNamespace
	for i := range binding.Subjects {
		binding.Subjects[i].Namespace = operatorNamespace
	}
	// Once for the suite: a spec run earlier may have installed them.
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(ctx, o); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
}

// tcpProxy forwards TCP connections to target; down() drops every
// connection and refuses new ones, as an API server that went away; up()
// listens again on the same address.
type tcpProxy struct {
	target, addr string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newTCPProxy(target string) *tcpProxy {
	p := &tcpProxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *tcpProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
	_, _ = io.Copy(c, s)
	_ = c.Close()
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *tcpProxy) up() {
	var ln net.Listener
	Eventually(func() error {
		var err error
		ln, err = net.Listen("tcp", p.addr)
		return err
	}).Should(Succeed())
	p.serve(ln)
}

func (p *tcpProxy) close() { p.down() }

// unlistableSpecs: a kind the autopilot cannot list fails only its own
// assets, within a deadline, and the rest converges.
func unlistableSpecs(ctx context.Context) {
	It("fails only the assets of a kind it cannot list, within a deadline, and recovers when it can", func() {
		const kdCRD = "kubedeschedulers.operator.openshift.io"
		role := &rbacv1.ClusterRole{}
		readYAML(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"), role)
		restore := role.DeepCopy()
		for i := range role.Rules {
			if slices.Contains(role.Rules[i].Resources, "kubedeschedulers") {
				role.Rules[i].Verbs = slices.DeleteFunc(role.Rules[i].Verbs, func(v string) bool { return v == "list" || v == "watch" })
			}
		}
		setRole := func(r *rbacv1.ClusterRole) {
			Eventually(func() error {
				live := &rbacv1.ClusterRole{}
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), live); err != nil {
					return err
				}
				live.Rules = r.Rules
				return k8s.Update(ctx, live)
			}).Should(Succeed())
		}
		// The running manager has finished a reconcile and watches the kind.
		Eventually(func() []string { return rec.Snapshot().Health.Watched }).Should(ContainElement(ContainSubstring("KubeDescheduler")))
		setRole(role)
		// A fresh informer for the kind: its CRD comes back while listing is forbidden.
		removeCRD(ctx, kdCRD)
		// Wait until the reconciler has dropped the kind's watch, so the
		// re-installed CRD really gets a fresh informer (a reconcile that
		// only sees the CRD come back keeps the old one).
		Eventually(func() []string { return rec.Snapshot().Health.Watched }).Should(Not(ContainElement(ContainSubstring("KubeDescheduler"))))
		installCRD(ctx, deschedulerCRD("4-21"))
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })

		Eventually(func() string { return status("descheduler-loadaware").Reason }).WithTimeout(60 * time.Second).Should(ContainSubstring("could not be listed"))
		Expect(status("descheduler-loadaware").Outcome).To(Equal(engine.Failed))
		Expect(rec.Snapshot().Health.Unsynced).To(ContainElement("KubeDescheduler.operator.openshift.io"))
		// Everything else still converges, promptly.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(15 * time.Second).Should(Equal([]any{"psi=1"}))

		setRole(restore)
		Eventually(outcomeOf("descheduler-loadaware")).WithTimeout(90 * time.Second).Should(Equal(engine.Unchanged))
		Expect(rec.Snapshot().Health.Unsynced).To(BeEmpty())
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "") })
		Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
	})
}
