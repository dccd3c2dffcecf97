package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Render runs 'render args...' offline and returns the exit code; tests
// use it (cluster.Render also reads clusters).
func Render(args []string, stdout, stderr io.Writer) int {
	return Execute(append([]string{"render"}, args...), stdout, stderr, Cluster{})
}

type renderOptions struct {
	hcoFile, nodesFile, objectsFile, factsFile, kubeconfig, namespace, output string
	// factsKey is the file of the key that signs and verifies facts files.
	factsKey string
	// nodePoolNamespace is the NodePool's namespace on the management
	// cluster (--output nodepool).
	nodePoolNamespace string
	// deployment is the autopilot's Deployment, namespace/name (live).
	deployment string
	// activation, when set, stands in for the HCO's platform.kubevirt.io/autopilot.
	activation   *string
	crds, assets []string
	showExcluded bool
}

func newRenderCommand(cl Cluster, args []string) *cobra.Command {
	o := renderOptions{}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Show what the autopilot would apply, offline or against a cluster",
		Long: `Show what the controller would do, by the controller's own evaluation:
offline from an HCO file (no cluster needed), or against a live cluster.

Outputs: yaml and json (the objects), status (every asset's decision and
reason), features, diff (live only: what a reconcile would change, by
server-side dry-run), and facts: what was read (a cluster's HCO, trimmed
nodes, CRDs, the objects the evaluation read, the operand images) as one
file that --facts-file renders offline exactly as the controller would
on that cluster, in Git or in a pipeline ('fn' is the same as a KRM
function).

Exit codes: 0 done; 1 diff found changes; 2 error (flags, input, cluster);
3 an asset's annotation is invalid (the output is still written, the
invalid decisions are named on stderr).`,
		Example: `  # offline, no cluster
  ` + Name + ` render --hco-file config/samples/hco.yaml --output status
  ` + Name + ` render --hco-file config/samples/hco.yaml --output features
  ` + Name + ` render --hco-file config/samples/hco.yaml --nodes-file config/samples/nodes.yaml --crds crds/ -o yaml

  # against a cluster
  ` + Name + ` render --kubeconfig ~/.kube/config --output diff

  # a cluster's facts, rendered later without it
  ` + Name + ` render --kubeconfig ~/.kube/config --output facts > cluster-a.facts.yaml
  ` + Name + ` render --facts-file cluster-a.facts.yaml -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// As kubectl: complete and validate every flag before a client
			// is built or the cluster binary takes over.
			if err := o.complete(cmd.Flags()); err != nil {
				return err
			}
			if err := o.validate(cmd.Flags()); err != nil {
				return err
			}
			var src Source
			switch {
			case o.hcoFile != "":
				src = files(o)
			case o.factsFile != "":
				src = factsSource{path: o.factsFile, keyFile: o.factsKey}
			case cl.Source == nil:
				return delegate(cl, args)
			default:
				var err error
				if src, err = cl.Source(o.kubeconfig, o.namespace, o.deployment); err != nil {
					return &exitError{ExitError, err}
				}
			}
			return runRender(o, src, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.hcoFile, "hco-file", "", "render offline from this HyperConverged YAML (no cluster needed)")
	f.StringVar(&o.nodesFile, "nodes-file", "", "offline: Nodes (a List or YAML documents) for hardware and topology facts")
	f.StringSliceVar(&o.crds, "crds", nil, "offline: CRD file or folder (repeatable); without it every kind counts as installed")
	f.StringVar(&o.objectsFile, "objects-file", "", "offline: StorageProfiles, StorageClasses, the Infrastructure and Scheduler, MachineConfigPools, KubeletConfigs and NodeHealthChecks (another's clashes with the autopilot's), and objects assets read (a List or YAML documents); without it they are absent")
	f.StringVar(&o.factsFile, "facts-file", "", "render offline from a cluster's facts (written by --output facts), exactly as the controller would on it")
	f.StringVar(&o.factsKey, "facts-key", "", "a file holding the key (at least 32 random bytes) that signs --output facts and verifies --facts-file; a facts file not verified by it may not carry patch or ignore-fields annotations")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "read the HCO and cluster facts from this cluster (default: $KUBECONFIG, then in-cluster, then ~/.kube/config)")
	f.StringVarP(&o.namespace, "namespace", "n", "openshift-cnv", "live: namespace of the HyperConverged object")
	f.StringVar(&o.deployment, "autopilot-deployment", DefaultDeployment, "live: the autopilot's Deployment (namespace/name), whose RELATED_IMAGE_* environment names the operand images")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml, json, status, features (one line per feature: maturity, switch, state, assets), diff (live only; exit 1 when something would change), facts (what was read, for --facts-file), or nodepool (a hosted control plane: the ConfigMap a NodePool's spec.config takes, for the management cluster)")
	f.StringVar(&o.nodePoolNamespace, "nodepool-namespace", "clusters", "--output nodepool: the NodePool's namespace on the management cluster")
	f.BoolVar(&o.showExcluded, "show-excluded", false, "yaml/json: also list assets that would not be applied, with the reason")
	f.StringSliceVar(&o.assets, "asset", nil, "only this asset (repeatable)")
	f.String("activation", "", "evaluate as if the HCO's platform.kubevirt.io/autopilot were this (e.g. true: what switching a paused autopilot on would do)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json", "status", "features", "diff", "facts"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("asset", completeAssets)
	return cmd
}

func completeAssets(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []cobra.Completion
	for _, a := range cat.Assets {
		names = append(names, a.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// complete fills options that are not plain flag values.
func (o *renderOptions) complete(f *pflag.FlagSet) error {
	if f.Changed("activation") {
		v, _ := f.GetString("activation")
		o.activation = &v
	}
	return nil
}

// validate refuses flags that do not go together or name nothing.
func (o *renderOptions) validate(f *pflag.FlagSet) error {
	switch o.output {
	case "yaml", "json", "status", "diff", "features", "facts", "nodepool":
	default:
		return &exitError{ExitError, fmt.Errorf("--output %q: want yaml, json, status, diff, features, facts or nodepool", o.output)}
	}
	if f.Changed("nodepool-namespace") && o.output != "nodepool" {
		return &exitError{ExitError, fmt.Errorf("--nodepool-namespace is for --output nodepool")}
	}
	if o.factsFile != "" {
		for _, other := range []string{"hco-file", "nodes-file", "crds", "objects-file", "kubeconfig", "namespace", "autopilot-deployment"} {
			if f.Changed(other) {
				return &exitError{ExitError, fmt.Errorf("--%s and --facts-file both name the cluster: a facts file holds every fact, give one of them", other)}
			}
		}
		if o.output == "diff" {
			return &exitError{ExitError, errDiffNeedsCluster}
		}
	}
	if o.hcoFile != "" {
		for _, live := range []string{"kubeconfig", "namespace", "autopilot-deployment"} {
			if f.Changed(live) {
				return &exitError{ExitError, fmt.Errorf("--%s reads a cluster and --hco-file renders offline: give one of them", live)}
			}
		}
		if o.output == "diff" {
			return &exitError{ExitError, errDiffNeedsCluster}
		}
	} else if o.factsFile == "" {
		if ns, name, ok := strings.Cut(o.deployment, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return &exitError{ExitError, fmt.Errorf("--autopilot-deployment %q: want namespace/name", o.deployment)}
		}
		for _, offline := range []string{"nodes-file", "crds", "objects-file"} {
			if f.Changed(offline) {
				return &exitError{ExitError, fmt.Errorf("--%s is an offline fact: use it with --hco-file (a cluster supplies its own)", offline)}
			}
		}
	}
	if o.factsKey != "" && o.factsFile == "" && o.output != "facts" {
		return &exitError{ExitError, fmt.Errorf("--facts-key signs --output facts and verifies --facts-file: give it with one of them")}
	}
	if o.output == "facts" && (len(o.assets) > 0 || o.showExcluded || o.activation != nil) {
		return &exitError{ExitError, fmt.Errorf("--output facts records the cluster as it is, for every asset: --asset, --show-excluded and --activation do not apply (give them to the render from the facts)")}
	}
	return o.validateAssets()
}

// validateAssets refuses an asset name the catalog does not hold.
func (o *renderOptions) validateAssets() error {
	if len(o.assets) == 0 {
		return nil
	}
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return &exitError{ExitError, err}
	}
	for _, name := range o.assets {
		if _, ok := cat.Get(name); !ok {
			return &exitError{ExitError, fmt.Errorf("asset %q: no such asset ('render --output status' lists them)", name)}
		}
	}
	return nil
}

// DefaultDeployment is where config/default deploys the autopilot.
const DefaultDeployment = "virt-platform-autopilot-system/virt-platform-autopilot"

// evaluation is one render's evaluation: what was read and decided.
type evaluation struct {
	cat     *catalog.Catalog
	in      Input
	act     engine.Activation
	eval    engine.Evaluation
	notices []engine.Notice
	// reads are the live objects the evaluation read (output facts only).
	reads *recorder
}

// evaluate reads src and runs the controller's evaluation on it.
func evaluate(ctx context.Context, o renderOptions, src Source) (*evaluation, error) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return nil, &exitError{ExitError, err}
	}
	in, err := src.Read(ctx, cat)
	if err != nil {
		return nil, &exitError{ExitError, err}
	}
	e := &evaluation{cat: cat, in: in}
	live := in.Live
	ev := &engine.Evaluator{Renderer: render.New(assets.FS, render.OneShot())}
	if o.output == "facts" {
		// Every object the evaluation reads as live goes into the file,
		// also those of assets a paused or partial activation leaves
		// alone: a render from the facts may preview switching them on.
		e.reads = &recorder{live: in.Live}
		live = e.reads
		on := "true"
		all := &engine.Evaluator{Renderer: render.New(assets.FS, render.OneShot())}
		e.reads.targets(ctx, all.Preview(ctx, cat, rendercontext.New(withActivation(in.Facts, &on)), live))
	}
	rc := rendercontext.New(withActivation(in.Facts, o.activation))
	e.act = engine.ActivationOf(rc, cat)
	tombs, err := tombstone.Load(assets.FS, assets.TombstonesDir)
	if err != nil {
		return nil, &exitError{ExitError, err}
	}
	// The plan renders from the context the tombstones phase leaves, as
	// the controller's does.
	now := time.Now()
	planned := tombstone.PlanContext(rc, tombs, e.act, tombstone.WouldDelete(rc, tombs,
		gate.New(gate.Config{Catalog: cat, SettlePeriod: -1, Now: func() time.Time { return now }})))
	e.eval = ev.Preview(ctx, cat, planned, live)
	gate.Preview(cat, e.eval, now)
	if e.reads != nil {
		e.reads.targets(ctx, e.eval)
	}
	e.notices = ev.Notices(cat, e.eval)
	if in.Unverified {
		// A shared object's template merges into the live object's
		// content (the cluster monitoring configuration, the node
		// disruption policy beside an admin's) and copies it into the
		// output: from an unverified file, its author's. (Other templates
		// that read their live object keep bounded values only: a CPU
		// vendor's IOMMU argument, a descheduler profile of the CRD's
		// enum.)
		var copied []string
		for i := range e.eval.Decisions {
			d := &e.eval.Decisions[i]
			if d.Verdict == engine.VerdictIncluded && d.Live != nil && d.Asset.Shared {
				copied = append(copied, engine.ObjectKey(d.Live))
			}
		}
		if len(copied) > 0 {
			return nil, &exitError{ExitError, fmt.Errorf("%s: a facts file not verified with --facts-key may not carry live objects whose content the render copies into its output (the file's author would choose it); write the facts with 'render --output facts --facts-key KEY' and render them with the same key", strings.Join(copied, ", "))}
		}
	}
	return e, nil
}

// pausedWarning is what render says when the autopilot is paused; how
// names the way to preview switching it on.
func pausedWarning(act engine.Activation, how string) string {
	return fmt.Sprintf("the autopilot is paused by HCO annotation %s=%q: it writes and deletes nothing (%s previews switching it on)", annotations.Autopilot, act.Value, how)
}

// invalid lists the decisions left alone for an annotation not understood.
func invalid(ds []engine.Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Verdict == engine.VerdictInvalid {
			out = append(out, fmt.Sprintf("asset %s: annotation %s: %s", d.Asset.Name, d.Annotation, d.Reason))
		}
	}
	return out
}

func runRender(o renderOptions, src Source, stdout, stderr io.Writer) error {
	ctx := context.Background()
	e, err := evaluate(ctx, o, src)
	if err != nil {
		return err
	}
	for _, n := range e.in.Notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	if e.act.Paused {
		fmt.Fprintln(stderr, "warning:", pausedWarning(e.act, "--activation=true"))
	}
	// What the controller reports as Events on the HCO, the CLI says on stderr.
	for _, n := range e.notices {
		fmt.Fprintln(stderr, "warning:", n.Message)
	}
	cat, rc, ds := e.cat, e.eval.Context, filter(e.eval.Decisions, o.assets)

	var werr error
	switch o.output {
	case "facts":
		werr = writeFacts(stdout, cat, e.in, e.reads, o.factsKey)
	case "features":
		werr = features.WriteTable(stdout, features.Of(cat, rc, ds, nil))
	case "nodepool":
		werr = writeNodePool(stdout, stderr, ds, o.nodePoolNamespace)
	case "status":
		werr = preview.WriteStatus(stdout, ds)
	case "json":
		werr = preview.WriteJSON(stdout, preview.Entries(ds, o.showExcluded))
	case "yaml":
		werr = preview.WriteYAML(stdout, preview.Entries(ds, o.showExcluded))
	case "diff":
		// A paused or partial autopilot deletes nothing, and a diff of
		// chosen assets leaves tombstones out.
		werr = src.Diff(ctx, rc, ds, e.act.All() && len(o.assets) == 0, stdout)
	}
	var ee *exitError
	if werr != nil && !errors.As(werr, &ee) {
		werr = &exitError{ExitError, werr}
	}
	if werr != nil && (!errors.As(werr, &ee) || ee.code != ExitChanges) {
		return werr
	}
	// An invalid annotation is an error a CI job must see, after the output;
	// it outranks "changes". Facts are complete whatever the annotations
	// say: the render from them reports it.
	if bad := invalid(ds); len(bad) > 0 && o.output != "facts" {
		return &exitError{ExitInvalid, fmt.Errorf("%d asset(s) INVALID, left as they are until fixed:\n  %s", len(bad), strings.Join(bad, "\n  "))}
	}
	return werr
}

// files is render's offline Source: the HCO and facts from files.
type files renderOptions

func (f files) Read(_ context.Context, cat *catalog.Catalog) (Input, error) {
	facts, assumeAll, err := preview.LoadFacts(preview.Files{HCO: f.hcoFile, Nodes: f.nodesFile, CRDs: f.crds, Objects: f.objectsFile, Reads: rendercontext.Reads(cat)})
	if err != nil {
		return Input{}, err
	}
	facts.AssumeAllKinds = assumeAll
	return Input{Facts: facts, Live: preview.Static{facts.HCO}}, nil
}

func (files) Diff(context.Context, *rendercontext.RenderContext, []engine.Decision, bool, io.Writer) error {
	return errDiffNeedsCluster
}

// withActivation returns facts whose HCO carries the activation switch v
// (nil: as it is), on a copy.
func withActivation(f rendercontext.Facts, v *string) rendercontext.Facts {
	if v == nil || f.HCO == nil {
		return f
	}
	hco := f.HCO.DeepCopy()
	a := hco.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[annotations.Autopilot] = *v
	hco.SetAnnotations(a)
	f.HCO = hco
	return f
}

func filter(ds []engine.Decision, only []string) []engine.Decision {
	if len(only) == 0 {
		return ds
	}
	keep := map[string]bool{}
	for _, n := range only {
		keep[n] = true
	}
	var out []engine.Decision
	for _, d := range ds {
		if keep[d.Asset.Name] {
			out = append(out, d)
		}
	}
	return out
}
