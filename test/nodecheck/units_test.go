package nodecheck

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
)

// systemdVerify runs systemd-analyze verify on units inside root and
// returns every line it prints. Without systemd as PID 1 (a container)
// verify still loads each unit with systemd's own parser: --root makes it
// read units, drop-ins and Exec programs inside root (so a program our
// unit names must exist there, executable), --man=no skips Documentation=
// lookups, and --recursive-errors=no limits failures to the named units
// (not the targets they order against). Unknown keys, bad values and
// invalid sections are only logged by systemd ("…, ignoring."), never an
// exit code, so any line printed is a finding.
func systemdVerify(analyze, root string, units []string) []string {
	if len(units) == 0 {
		return nil
	}
	args := append([]string{"verify", "--root=" + root, "--man=no", "--recursive-errors=no"}, units...)
	cmd := exec.Command(analyze, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			lines = append(lines, strings.ReplaceAll(l, root, ""))
		}
	}
	if err != nil && len(lines) == 0 {
		lines = append(lines, "systemd-analyze verify: "+err.Error())
	}
	return lines
}

// distinctConfigs returns each distinct merged config of the matrix's
// pools once, with one cell that renders it (for messages).
func distinctConfigs(t *testing.T) []struct {
	cfg  t35.Config
	pool *poolSet
} {
	r := renderAll(t)
	seen := map[string]bool{}
	var out []struct {
		cfg  t35.Config
		pool *poolSet
	}
	for _, p := range r.Pools {
		cfg, errs := mergedConfig(p)
		if len(errs) > 0 {
			continue // TestPoolRender reports it
		}
		key, _ := json.Marshal([]any{p.Pool, cfg.Storage, cfg.Systemd})
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		out = append(out, struct {
			cfg  t35.Config
			pool *poolSet
		}{cfg, p})
	}
	return out
}

// TestSystemdUnits: every unit and drop-in of every pool's rendered config
// passes systemd-analyze verify on a node root (noderoot_test.go).
func TestSystemdUnits(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "Debian package systemd")
	n := 0
	for _, c := range distinctConfigs(t) {
		root := t.TempDir()
		units, err := writeNodeRoot(root, c.cfg, releases[len(releases)-1], c.pool.Pool)
		if err != nil {
			t.Fatal(err)
		}
		n += len(units)
		if lines := systemdVerify(analyze, root, units); len(lines) > 0 {
			t.Errorf("pool %s (%s), rendered for %s: systemd-analyze verify:\n  %s", c.pool.Pool, ourUnitNames(c.cfg), c.pool.Cases[0], strings.Join(lines, "\n  "))
		}
	}
	if n == 0 {
		t.Fatal("no unit was verified: the matrix lost them")
	}
}
