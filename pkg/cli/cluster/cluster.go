// Package cluster holds the commands that talk to a cluster: run (the
// controller) and render --kubeconfig. It links the API client and the
// controller machinery, which the offline command line (package cli)
// leaves out; cmd/virt-platform-autopilot-cluster serves it.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/dryrun"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Commands are the cluster commands for cli.Execute.
func Commands() cli.Cluster {
	return cli.Cluster{Run: newRunCommand, Source: source}
}

// Execute runs the whole command line, cluster commands included.
func Execute(args []string, stdout, stderr io.Writer) int {
	return cli.Execute(args, stdout, stderr, Commands())
}

// Render runs 'render args...' (offline or against a cluster) and returns
// the exit code; tests use it.
func Render(args []string, stdout, stderr io.Writer) int {
	return Execute(append([]string{"render"}, args...), stdout, stderr)
}

// NewRootCommand is the whole command tree.
func NewRootCommand() *cobra.Command {
	return cli.NewRootCommand(Commands(), nil)
}

// live is render's Source against a cluster.
type live struct {
	c          client.Client
	namespace  string
	deployment client.ObjectKey
}

func source(kubeconfig, namespace, deployment string) (cli.Source, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		if errors.Is(err, errNoCluster) {
			return nil, fmt.Errorf("no input: give --hco-file to render offline, or --kubeconfig (or KUBECONFIG, or run in a pod) to read a cluster")
		}
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	ns, name, _ := strings.Cut(deployment, "/") // validated by render
	return live{c: c, namespace: namespace, deployment: client.ObjectKey{Namespace: ns, Name: name}}, nil
}

func (l live) Read(ctx context.Context, cat *catalog.Catalog) (cli.Input, error) {
	facts, err := gather.Facts(ctx, l.c, l.namespace, rendercontext.Reads(cat))
	if err != nil {
		return cli.Input{}, fmt.Errorf("read HCO %s/%s and cluster facts: %w", l.namespace, rendercontext.HCOName, err)
	}
	in := cli.Input{Facts: facts, Live: gather.LiveReader{Reader: l.c}}
	// The operand images the controller in its pod sees: its Deployment's.
	images, unread, err := gather.Images(ctx, l.c, l.deployment)
	switch {
	case err != nil:
		in.Notes = append(in.Notes, err.Error()+"; operand images are unknown, so assets that need one wait (--autopilot-deployment names another)")
		in.Unknown = append(in.Unknown, "the operand images ("+err.Error()+")")
	default:
		in.Facts.Images = images
		in.Notes = append(in.Notes, fmt.Sprintf("operand images from Deployment %s (%d)", l.deployment, len(images)))
		if len(unread) > 0 {
			in.Notes = append(in.Notes, fmt.Sprintf("Deployment %s takes %s from elsewhere (valueFrom, envFrom, a reference): unknown here, so assets that need them wait", l.deployment, strings.Join(unread, ", ")))
			in.Unknown = append(in.Unknown, fmt.Sprintf("operand images Deployment %s takes from elsewhere (%s)", l.deployment, strings.Join(unread, ", ")))
		}
	}
	return in, nil
}

func (l live) Diff(ctx context.Context, rc *rendercontext.RenderContext, ds []engine.Decision, deletions bool, stdout io.Writer) error {
	cat, tombs, err := app.LoadEmbedded()
	if err != nil {
		return err
	}
	if !deletions {
		tombs = nil
	}
	diffs, err := dryrun.Diff(ctx, l.c, cat, rc, ds, tombs, time.Now())
	if err != nil {
		return err
	}
	var b bytes.Buffer
	changes := 0
	for _, d := range diffs {
		fmt.Fprintf(&b, "%s %s", d.Object, d.Change)
		if d.Reason != "" {
			fmt.Fprintf(&b, " (%s)", d.Reason)
		}
		switch {
		case d.Outcome == engine.Staged:
			fmt.Fprintf(&b, " [%s]", d.Held)
		case d.Held != "":
			fmt.Fprintf(&b, " [held, %s: %s]", d.Outcome, d.Held)
		}
		for _, f := range d.Deferred {
			fmt.Fprintf(&b, " [deferred to its owner: %s]", f)
		}
		fmt.Fprintln(&b)
		for _, r := range d.Reactions {
			// What the HCO does about it: its rollout, which is none.
			fmt.Fprintf(&b, "  the HCO reacts to %s: %s (%s)\n", r.Field, r.Effect, hcoreact.NoReboot)
		}
		if d.Change != dryrun.Unchanged {
			changes++
			b.WriteString(d.Diff)
		}
	}
	// The VMs each rebooted pool holds, read now (a diff was asked for).
	impacts := map[string]impact.Pool{}
	for _, p := range impact.Of(ctx, l.c, rc, dryrun.RebootPools(diffs)) {
		impacts[p.Pool] = p
	}
	b.WriteString("\n" + dryrun.DisruptionSummary(diffs, rc.Topology, impacts))
	if _, err := stdout.Write(b.Bytes()); err != nil {
		return err
	}
	if changes > 0 {
		return cli.Exit(cli.ExitChanges, nil)
	}
	return nil
}
