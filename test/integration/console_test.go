package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// consoleSpecs: the console plugin, built as shipped, loaded by a real
// browser into a host page that gives it what the console does, against
// the real autopilot and API server: what a person sees, what their
// actions change, with their own rights.
func consoleSpecs(ctx context.Context) {
	It("shows in a browser what will reboot, when and why, previews a switch, and changes the HCO with the user's own rights", func() {
		requireConsole()
		host := newConsoleHost(consoleUsers(ctx))
		b := newBrowser()

		workerPoolAtRest(ctx)
		gpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "console-gpu", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", pciLabel: "true"}}}
		Expect(k8s.Create(ctx, gpu)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, gpu))).To(Succeed())
			untilSettled()
		})
		untilSettled()
		opensAt := closedWindow("admin")
		DeferCleanup(func() {
			// No window: the switched-off MachineConfig's deletion goes at once.
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, pciSwitch, "")
				setAnnotation(u, annotations.Autopilot, "")
				setAnnotation(u, annotations.DisruptionWindow, "")
			})
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(time.Minute).Should(BeNil())
		})

		By("a viewer sees the autopilot managed and the window closed, with when it opens")
		b.open(Default, host.login("viewer", "page"))
		Expect(b.text(Default, `[data-test="mode"]`)).To(Equal("managed"))
		Expect(b.text(Default, `[data-test="window-state"]`)).To(Equal("closed"))
		Expect(b.text(Default, `[data-test="window"]`)).To(ContainSubstring("opens in 1h"))
		Expect(b.text(Default, `[data-test="pool-worker"]`)).To(ContainSubstring("nothing waiting"))
		b.accessible()

		By("before turning PCI passthrough on, the preview says what it writes, what it reboots and that the window holds it")
		b.click(Default, `#switch-pci-passthrough`)
		Expect(b.text(Default, `[data-test="preview-summary"]`)).To(ContainSubstring("reboots pool worker"))
		Expect(b.text(Default, `[data-test="preview-change"]`)).To(And(ContainSubstring("create"), ContainSubstring(pciMC), ContainSubstring("disruption window closed")))
		Expect(b.text(Default, `[data-test="preview-pool"]`)).To(ContainSubstring("Pool worker"))
		b.screenshot("preview", `.pf-v6-c-modal-box`)

		By("the viewer may not turn it on: the API server's refusal, in plain words, and the HCO unchanged")
		b.confirm("Turn on")
		Expect(b.text(Default, `[data-test="action-error"]`)).To(And(ContainSubstring("your user may not do this"), ContainSubstring("forbidden")))
		Expect(hco().GetAnnotations()).NotTo(HaveKey(pciSwitch))

		By("an admin turns it on: the HCO carries the switch, and the write is staged until the window opens")
		b.open(Default, host.login("admin", "page"))
		b.click(Default, `#switch-pci-passthrough`)
		Expect(b.text(Default, `[data-test="preview-summary"]`)).To(ContainSubstring("reboots pool worker"))
		b.confirm("Turn on")
		Expect(b.text(Default, `[data-test="action-done"]`)).To(ContainSubstring("pci-passthrough turned on"))
		Eventually(func() string { return hco().GetAnnotations()[pciSwitch] }).Should(Equal("true"))
		Eventually(outcomeOf("pci-passthrough")).WithTimeout(testSettle + 30*time.Second).Should(Equal(engine.Staged))
		Eventually(func(g Gomega) string {
			b.open(g, host.login("admin", "page"))
			return b.text(g, `[data-test="pool-worker"]`)
		}).Should(And(ContainSubstring("1 waiting: reboots"), ContainSubstring("disruption window closed"), ContainSubstring(pciMC), ContainSubstring("goes in 1h")))
		Expect(b.text(Default, `[data-test="feature-pci-passthrough"]`)).To(ContainSubstring("Staged"))
		b.accessible()
		b.screenshot("pools-staged", `[data-test="pools"]`)

		By("the window open and the pool busy: the write waits for the pool, and the view says so")
		setPoolState(ctx, "worker", true)
		DeferCleanup(func() { setPoolState(ctx, "worker", false) })
		clockShift.Store(int64(time.Until(opensAt) + time.Minute))
		reconciledAt(poke())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Settling))
		Eventually(func(g Gomega) string {
			b.open(g, host.login("admin", "page"))
			return b.text(g, `[data-test="pool-worker"]`)
		}).Should(And(ContainSubstring("pool busy"), ContainSubstring("MachineConfigPool worker is updating")))
		Expect(b.text(Default, `[data-test="window-state"]`)).To(Equal("open"))
		b.screenshot("pools-busy", `[data-test="pools"]`)

		By("the pool at rest: the MachineConfig goes, and the pool lists the rollout")
		setPoolState(ctx, "worker", false)
		poke()
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(time.Minute).ShouldNot(BeNil())
		Eventually(func(g Gomega) string {
			b.open(g, host.login("admin", "page"))
			return b.text(g, `[data-test="pool-worker"]`)
		}).Should(And(ContainSubstring("Last rollouts"), ContainSubstring(pciMC)))

		By("the HyperConverged's Autopilot tab shows the same; pausing from it is the admin's own patch")
		clockShift.Store(0) // the real clock again: the window closed, times as recorded
		b.open(Default, host.login("admin", "tab"))
		Expect(b.text(Default, `#tab-name`)).To(Equal("Autopilot"))
		b.clickButton("Pause")
		Expect(b.text(Default, `[data-test="preview-summary"]`)).To(Equal("Nothing would be written or deleted."))
		b.confirm("Pause")
		Eventually(func() string { return hco().GetAnnotations()[annotations.Autopilot] }).Should(Equal("false"))
		Expect(b.text(Default, `[data-test="action-done"]`)).To(ContainSubstring("Paused"))
		Eventually(func(g Gomega) string {
			b.open(g, host.login("admin", "tab"))
			return b.text(g, `[data-test="mode"]`)
		}).Should(Equal("paused"))
		// Paused, the autopilot sends nothing: no pool has a write waiting.
		Expect(b.text(Default, `[data-test="pool-worker"]`)).To(ContainSubstring("nothing waiting"))
		b.accessible()
		b.screenshot("hco-tab", `[data-test="autopilot-state"]`)

		By("the admin sets another window, typed as a person types it")
		b.typeInto(`input[aria-label="Disruption window"]`, "Sat,Sun 02:00-06:00 UTC")
		b.clickButton("Set window")
		b.confirm("Set window")
		Eventually(func() string { return hco().GetAnnotations()[annotations.DisruptionWindow] }).Should(Equal("Sat,Sun 02:00-06:00 UTC"))
		Expect(b.text(Default, `[data-test="action-done"]`)).To(ContainSubstring("Disruption window set"))

		By("a user who may not read the HCO sees nothing of its plan")
		b.open(Default, host.login("stranger", "page"))
		Expect(b.text(Default, `#plugin`)).To(And(ContainSubstring("cannot be read"), ContainSubstring("Forbidden")))
		Expect(b.text(Default, `#plugin`)).NotTo(ContainSubstring(pciMC))
	})

	It("shows in a browser a field left to its declared owner, and names the other writer of a field fight", func() {
		requireConsole()
		host := newConsoleHost(consoleUsers(ctx))
		b := newBrowser()
		psiObject := func(g Gomega) string {
			b.open(g, host.login("viewer", "page"))
			b.click(g, `[data-test="feature-psi"] td.pf-v6-c-table__toggle button`)
			return b.text(g, `[data-test="object-psi-enable"]`)
		}
		setYield := func(v string) {
			reconciledSince(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.YieldTo, v)
			}))
		}
		edit := func(manager string) {
			update(mcGVK, "", psiMC, manager, func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
			})
		}

		By("a pipeline declared in yield-to owns the kernel arguments: the view says they are left to it")
		setYield("default, my-pipeline")
		DeferCleanup(func() {
			setYield("none")
			Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
			setYield("")
		})
		edit("my-pipeline")
		Eventually(func() []engine.Deferral { return status("psi-enable").Deferred }).ShouldNot(BeEmpty())
		Eventually(psiObject).Should(And(ContainSubstring("Left to their owners"), ContainSubstring("/spec/kernelArguments (my-pipeline)")))
		Expect(b.text(Default, `[data-test="autopilot-state"]`)).To(ContainSubstring("yield-to: default, my-pipeline"))
		b.accessible()
		b.screenshot("deferred", `[data-test="feature-psi"]`)

		By("handed back, another operator fights for them: the view names it")
		setYield("none")
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		// The opponent reverts every correction until the view has shown
		// the fight (a throttled object is corrected again once its budget
		// refills).
		Eventually(func(g Gomega) string {
			if args := kernelArgs(psiMC); len(args) == 1 && args[0] == "psi=1" {
				edit("opponent-operator")
			}
			return psiObject(g)
		}).WithTimeout(90 * time.Second).Should(And(ContainSubstring("Throttled"), ContainSubstring("Fights with: opponent-operator")))
		b.screenshot("fight", `[data-test="feature-psi"]`)
		// The opponent gives up: the autopilot converges by itself.
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(30 * time.Second).Should(Equal([]any{"psi=1"}))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})
}

// consoleUsers makes three users as service accounts and returns their
// tokens: an admin who may patch the HCO, a viewer who may read it, and
// a stranger who may do neither.
func consoleUsers(ctx context.Context) map[string]string {
	GinkgoHelper()
	const ns = "console-users"
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}))).To(Succeed())
	hcoRule := func(verbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"hco.kubevirt.io"}, Resources: []string{"hyperconvergeds"}, Verbs: verbs}}
	}
	roles := map[string][]rbacv1.PolicyRule{"admin": hcoRule("get", "list", "watch", "patch"), "viewer": hcoRule("get", "list", "watch")}
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	tokens := map[string]string{}
	for _, user := range []string{"admin", "viewer", "stranger"} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "console-" + user, Namespace: ns}}
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, sa))).To(Succeed())
		if rules, ok := roles[user]; ok {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "console-spec-" + user, Namespace: hcoNamespace}, Rules: rules}
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "console-spec-" + user, Namespace: hcoNamespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
			}
			for _, o := range []client.Object{role, binding} {
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o))).To(Succeed())
				DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
			}
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		tokens[user] = tr.Status.Token
	}
	return tokens
}

// browser is a headless Chromium tab.
type browser struct{ ctx context.Context }

func newBrowser() *browser {
	GinkgoHelper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium()), chromedp.NoSandbox, chromedp.DisableGPU,
		// This machine's network is closed: Chromium's own background
		// connections would only be refused.
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1440, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(suiteCtx, opts...)
	bctx, cancel := chromedp.NewContext(actx)
	DeferCleanup(cancelAlloc)
	DeferCleanup(cancel)
	Expect(chromedp.Do(bctx)).To(Succeed(), "start %s", chromium())
	return &browser{ctx: bctx}
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// open loads url and waits until the plugin has shown its view (or the
// host or the view has said why not). g is where a failure goes: Default,
// or an Eventually's own, which tries again.
func (b *browser) open(g Gomega, url string) {
	GinkgoHelper()
	g.Expect(b.do(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`body[data-loaded]`)))).To(Succeed())
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`body`), "data-loaded"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state.Value).To(Equal("true"), "the host loaded the plugin: %s", b.text(g, `#host-error`))
	g.Expect(b.do(chromedp.WaitVisible(chromedp.CSS(`[data-test="autopilot-state"], #plugin .pf-v6-c-alert`)))).To(Succeed())
}

// text is what a person reads in the first element sel matches.
func (b *browser) text(g Gomega, sel string) string {
	GinkgoHelper()
	g.Expect(b.do(chromedp.WaitVisible(chromedp.CSS(sel)))).To(Succeed(), "wait for %s", sel)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	g.Expect(err).NotTo(HaveOccurred(), "read %s", sel)
	return strings.Join(strings.Fields(s), " ")
}

// click clicks the element sel matches (a switch's input, which PatternFly
// hides under its toggle).
func (b *browser) click(g Gomega, sel string) {
	GinkgoHelper()
	g.Expect(b.do(chromedp.WaitReady(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](fmt.Sprintf(`document.querySelector(%q).click()`, sel))(ctx, t)
			return err
		}))).To(Succeed(), "click %s", sel)
}

// typeInto empties the input sel matches, as a person selecting its text
// and deleting it, and types text key by key.
func (b *browser) typeInto(sel, text string) {
	GinkgoHelper()
	clear := fmt.Sprintf(`(() => { const i = document.querySelector(%q);
		Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(i, '');
		i.dispatchEvent(new Event('input', {bubbles: true})); })()`, sel)
	Expect(b.do(chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](clear)(ctx, t)
			return err
		}),
		chromedp.SendKeys(chromedp.CSS(sel), text))).To(Succeed(), "type into %s", sel)
}

// clickButton clicks the page's button whose text is label, as a person
// does; confirm clicks the one in the confirmation dialog.
func (b *browser) clickButton(label string) {
	GinkgoHelper()
	b.clickXPath(fmt.Sprintf(`//button[normalize-space(.)=%q]`, label))
}

func (b *browser) confirm(label string) {
	GinkgoHelper()
	b.clickXPath(fmt.Sprintf(`//*[contains(concat(' ', @class, ' '), ' pf-v6-c-modal-box ')]//button[normalize-space(.)=%q]`, label))
}

func (b *browser) clickXPath(xp string) {
	GinkgoHelper()
	sel := chromedp.Search(xp)
	Expect(b.do(chromedp.WaitVisible(sel), chromedp.Click(sel))).To(Succeed(), "click %s", xp)
}

// accessible runs axe-core on the plugin's view: no serious or critical
// violation.
func (b *browser) accessible() {
	GinkgoHelper()
	src, err := os.ReadFile(filepath.Join(repoRoot(), "console-plugin", "node_modules", "axe-core", "axe.min.js"))
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	_, err = chromedp.Run(ctx, chromedp.Evaluate[any](string(src)))
	Expect(err).NotTo(HaveOccurred())
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document.getElementById('plugin'), {resultTypes: ['violations']}).then(r => r.violations
			.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => v.id + ': ' + v.help + ' at ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join('; ')))`, chromedp.EvalAwaitPromise))
	Expect(err).NotTo(HaveOccurred())
	Expect(violations).To(BeEmpty(), "axe-core")
}

// screenshot saves what sel shows as _output/screenshots/<name>.png; with
// UPDATE_SCREENSHOTS=1 also as docs/images/console-<name>.png, the
// pictures the README and docs show.
func (b *browser) screenshot(name, sel string) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(repoRoot(), "_output", "screenshots")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)).To(Succeed())
	if os.Getenv("UPDATE_SCREENSHOTS") != "" {
		Expect(os.WriteFile(filepath.Join(repoRoot(), "docs", "images", "console-"+name+".png"), png, 0o644)).To(Succeed())
	}
}
