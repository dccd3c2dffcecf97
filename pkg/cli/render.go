// Package cli holds the binary's subcommands that tests run in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Exit codes of render, like kubectl diff's.
const (
	exitOK      = 0
	exitChanges = 1
	exitError   = 2
)

// Render shows what the controller would do, offline (--hco-file) or
// against a live cluster (--kubeconfig / KUBECONFIG). It returns the exit
// code: 0 done (diff: nothing would change), 1 diff found changes, 2 error.
func Render(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		hcoFile      = fs.String("hco-file", "", "render offline from this HyperConverged YAML (no cluster needed)")
		nodesFile    = fs.String("nodes-file", "", "offline: Nodes (a List or YAML documents) for hardware and topology facts")
		kubeconfig   = fs.String("kubeconfig", "", "read the HCO and cluster facts from this cluster (default $KUBECONFIG)")
		namespace    = fs.String("namespace", "openshift-cnv", "namespace of the HyperConverged object")
		output       = fs.String("output", "yaml", "yaml, json, status, or diff (live only; exit 1 when something would change)")
		showExcluded = fs.Bool("show-excluded", false, "yaml/json: also list assets that would not be applied, with the reason")
		crds, only   stringList
	)
	fs.Var(&crds, "crds", "offline: CRD file or folder (repeatable); without it every kind counts as installed")
	fs.Var(&only, "asset", "only this asset (repeatable)")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if err := runRender(renderOptions{
		hcoFile: *hcoFile, nodesFile: *nodesFile, crds: crds, kubeconfig: *kubeconfig, namespace: *namespace,
		output: *output, showExcluded: *showExcluded, assets: only,
	}, stdout); err != nil {
		if errors.Is(err, errChanges) {
			return exitChanges
		}
		fmt.Fprintln(stderr, "error:", err)
		return exitError
	}
	return exitOK
}

var errChanges = errors.New("changes")

type renderOptions struct {
	hcoFile, nodesFile, kubeconfig, namespace, output string
	crds, assets                                      []string
	showExcluded                                      bool
}

func runRender(o renderOptions, stdout io.Writer) error {
	switch o.output {
	case "yaml", "json", "status", "diff":
	default:
		return fmt.Errorf("--output %q: want yaml, json, status or diff", o.output)
	}
	ctx := context.Background()
	cat, tombs, err := app.LoadEmbedded()
	if err != nil {
		return err
	}
	for _, name := range o.assets {
		if _, ok := cat.Get(name); !ok {
			return fmt.Errorf("--asset %q: no such asset", name)
		}
	}
	var (
		rc   *rendercontext.RenderContext
		live engine.LiveReader
		c    client.Client
	)
	if o.hcoFile != "" {
		if o.output == "diff" {
			return fmt.Errorf("--output diff compares with a live cluster: use --kubeconfig instead of --hco-file")
		}
		facts, assumeAll, err := preview.LoadFacts(preview.Files{HCO: o.hcoFile, Nodes: o.nodesFile, CRDs: o.crds})
		if err != nil {
			return err
		}
		rc = rendercontext.New(facts)
		rc.AssumeAllKinds = assumeAll
		live = preview.Static{facts.HCO}
	} else {
		if c, err = liveClient(o.kubeconfig); err != nil {
			return err
		}
		facts, err := rendercontext.Gather(ctx, c, o.namespace)
		if err != nil {
			return fmt.Errorf("read HCO %s/%s and cluster facts: %w", o.namespace, rendercontext.HCOName, err)
		}
		rc = rendercontext.New(facts)
		live = preview.LiveReader{Reader: c}
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	ds := filter(ev.Plan(ctx, cat, rc, live, engine.Preview(rc)), o.assets)

	switch o.output {
	case "status":
		return preview.WriteStatus(stdout, ds)
	case "json":
		return preview.WriteJSON(stdout, preview.Entries(ds, o.showExcluded))
	case "yaml":
		return preview.WriteYAML(stdout, preview.Entries(ds, o.showExcluded))
	}
	if len(o.assets) > 0 {
		tombs = nil // a diff of chosen assets leaves tombstones out
	}
	diffs, err := preview.Diff(ctx, c, rc, ds, tombs)
	if err != nil {
		return err
	}
	changes := 0
	for _, d := range diffs {
		fmt.Fprintf(stdout, "%s %s", d.Object, d.Change)
		if d.Reason != "" {
			fmt.Fprintf(stdout, " (%s)", d.Reason)
		}
		fmt.Fprintln(stdout)
		if d.Change != preview.Unchanged {
			changes++
			fmt.Fprint(stdout, d.Diff)
		}
	}
	if changes > 0 {
		return errChanges
	}
	return nil
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

func liveClient(kubeconfig string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	} else if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		return nil, fmt.Errorf("no input: give --hco-file to render offline, or --kubeconfig (or KUBECONFIG) to read a cluster")
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return client.New(cfg, client.Options{Scheme: app.Scheme()})
}
