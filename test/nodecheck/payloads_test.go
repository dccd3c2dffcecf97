package nodecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A payload is a file a MachineConfig writes. Each kind is read by some
// program on the node; the test hands it to that program's own parser
// where one runs here, else to a checker of the documented format. A
// file of no known kind fails: a new kind needs its check first.
type payloadKind string

const (
	kindScript        payloadKind = "script"         // #! interpreter: bash -n, shellcheck, py_compile
	kindSysctl        payloadKind = "sysctl"         // sysctl.d(5): sysctl -p reads it
	kindSystemdConfig payloadKind = "systemd-config" // /etc/systemd/<daemon>.conf.d/*.conf
	kindKubeletDropIn payloadKind = "kubelet-dropin" // judged by the kubelet itself, kubelet_test.go
	kindMultipath     payloadKind = "multipath"      // multipath.conf(5), multipath_test.go
	kindSizingEnv     payloadKind = "sizing-env"     // MCO's node sizing file, checkSizingEnv
)

var sysctlLoad = regexp.MustCompile(`sysctl\s+(?:-\S+\s+)*-p\s*(\S+)`)

// classify names the payload's kind: from its path, its first line, or a
// unit of the same config that loads it (sysctl -p <path>).
func classify(cfg t35.Config, path string, data []byte) payloadKind {
	switch {
	case bytes.HasPrefix(data, []byte("#!")):
		return kindScript
	case strings.HasPrefix(path, "/etc/openshift/kubelet.conf.d/"):
		return kindKubeletDropIn
	case strings.HasPrefix(path, "/etc/sysctl.d/"):
		return kindSysctl
	case strings.HasPrefix(path, "/etc/multipath/"):
		return kindMultipath
	case path == "/etc/node-sizing-enabled.env":
		return kindSizingEnv
	case regexp.MustCompile(`^/etc/systemd/[a-z]+\.conf\.d/[^/]+\.conf$`).MatchString(path):
		return kindSystemdConfig
	}
	for _, u := range cfg.Systemd.Units {
		if u.Contents == nil {
			continue
		}
		for _, m := range sysctlLoad.FindAllStringSubmatch(*u.Contents, -1) {
			if m[1] == path {
				return kindSysctl
			}
		}
	}
	return ""
}

// checkScript runs the interpreter's own syntax check and shellcheck.
func checkScript(t *testing.T, path string, data []byte) []string {
	t.Helper()
	first, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(fields) == 0 {
		return []string{"no interpreter after #!"}
	}
	interp := filepath.Base(fields[0])
	if interp == "env" && len(fields) > 1 {
		interp = fields[1]
	}
	f := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out []string
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		b, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			out = append(out, fmt.Sprintf("%s: %s %v", name, strings.ReplaceAll(strings.TrimSpace(string(b)), f, path), errText(err)))
		}
	}
	switch interp {
	case "bash", "sh":
		run(needTool(t, interp, "the shell"), "-n", f)
		// Every severity: a style note in a node script is fixed or, if
		// justified, disabled in the script with its reason.
		run(needTool(t, "shellcheck", "Debian package shellcheck"), "-s", interp, f)
	case "python3", "python":
		run(needTool(t, "python3", "Debian package python3"), "-c", "import py_compile,sys; py_compile.compile(sys.argv[1], cfile=sys.argv[1]+'c', doraise=True)", f)
	default:
		out = append(out, "interpreter "+fields[0]+" has no syntax check here: add one")
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// checkSysctl reads a file as systemd-sysctl and sysctl -p do
// (sysctl.d(5)): blank lines, comments (# or ;), key = value with an
// optional leading - (failure ignored); every key must be a setting the
// running kernel has (/proc/sys), or sysctl -p fails on it.
func checkSysctl(data []byte, procSys string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		k, v = strings.TrimSpace(strings.TrimPrefix(k, "-")), strings.TrimSpace(v)
		switch {
		case !ok || k == "":
			out = append(out, fmt.Sprintf("line %d: not key = value: %q", n, l))
		case v == "":
			out = append(out, fmt.Sprintf("line %d: %s has no value", n, k))
		default:
			p := filepath.Join(procSys, strings.ReplaceAll(k, ".", "/"))
			if _, err := os.Stat(p); err != nil {
				out = append(out, fmt.Sprintf("line %d: the kernel has no setting %s", n, k))
			}
		}
	}
	return out
}

// checkSystemdConfig reads a daemon's drop-in (e.g. logind.conf.d) as an
// INI file whose sections and keys must be ones the daemon knows: those of
// its main file /etc/systemd/<daemon>.conf, in which the systemd package
// lists every option (commented out at its default).
func checkSystemdConfig(path string, data []byte, etcSystemd string) []string {
	daemon := strings.TrimSuffix(filepath.Base(filepath.Dir(path)), ".d")
	ref, err := os.ReadFile(filepath.Join(etcSystemd, daemon))
	if err != nil {
		return []string{fmt.Sprintf("no reference %s from the systemd package: %v", daemon, err)}
	}
	known := map[string]bool{}
	section := ""
	for _, l := range strings.Split(string(ref), "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			section = l
			known[section] = true
		} else if k, _, ok := strings.Cut(l, "="); ok && section != "" && !strings.Contains(k, " ") {
			known[section+k] = true
		}
	}
	var out []string
	section = ""
	for n, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l
			if !known[section] {
				out = append(out, fmt.Sprintf("line %d: %s knows no section %s", n+1, daemon, section))
			}
		default:
			k, v, ok := strings.Cut(l, "=")
			switch {
			case !ok || section == "":
				out = append(out, fmt.Sprintf("line %d: not key=value inside a section: %q", n+1, l))
			case !known[section+strings.TrimSpace(k)]:
				out = append(out, fmt.Sprintf("line %d: %s has no key %s in %s", n+1, daemon, strings.TrimSpace(k), section))
			case strings.TrimSpace(v) == "":
				out = append(out, fmt.Sprintf("line %d: %s is empty (resets the option)", n+1, strings.TrimSpace(k)))
			}
		}
	}
	return out
}

// checkPayload judges one file.
func checkPayload(t *testing.T, cfg t35.Config, f t35.File) []string {
	t.Helper()
	data, err := fileContents(f)
	if err != nil {
		return []string{err.Error()}
	}
	switch classify(cfg, f.Path, data) {
	case kindScript:
		var out []string
		if f.Mode == nil || *f.Mode&0o111 == 0 {
			out = append(out, "a script without an execute bit")
		}
		return append(out, checkScript(t, f.Path, data)...)
	case kindSysctl:
		return checkSysctl(data, "/proc/sys")
	case kindSystemdConfig:
		return checkSystemdConfig(f.Path, data, "/etc/systemd")
	case kindKubeletDropIn:
		return nil // the kubelet's own decoder, in TestKubelet
	case kindMultipath:
		return checkMultipath(f.Path, data, multipathManualOnce(t))
	case kindSizingEnv:
		return checkSizingEnv(data)
	}
	return []string{"no check knows this kind of file: add one to payloads_test.go"}
}

// TestPayloads: every file every pool's rendered config writes passes its
// reader's syntax check.
func TestPayloads(t *testing.T) {
	needTool(t, "systemd-analyze", "Debian package systemd") // the systemd package's config references
	multipathManualOnce(t)                                   // before any file: a missing tool skips the whole test, never a part
	seen := map[string]bool{}
	for _, c := range distinctConfigs(t) {
		for _, f := range c.cfg.Storage.Files {
			data, _ := fileContents(f)
			key := f.Path + "\x00" + string(data)
			if seen[key] {
				continue
			}
			seen[key] = true
			for _, p := range checkPayload(t, c.cfg, f) {
				t.Errorf("%s in pool %s, rendered for %s: %s", f.Path, c.pool.Pool, c.pool.Cases[0], p)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no file was checked: the matrix lost them")
	}
}

// checkSizingEnv reads /etc/node-sizing-enabled.env as MCO's sizing script
// does (machine-config-operator templates/common/_base/files/
// kubelet-auto-sizing.yaml, dynamic-system-reserved-calc.sh: the unit's
// EnvironmentFile, then NODE_SIZING_ENABLED compared with "true" and the
// three SYSTEM_RESERVED_* values written into --system-reserved or
// 20-auto-sizing.conf as they are): KEY=VALUE lines with every one of
// those keys, a boolean switch, and quantities the kubelet parses.
func checkSizingEnv(data []byte) []string {
	want := map[string]bool{"NODE_SIZING_ENABLED": false, "SYSTEM_RESERVED_MEMORY": false, "SYSTEM_RESERVED_CPU": false, "SYSTEM_RESERVED_ES": false}
	var out []string
	for n, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		seen, known := want[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("line %d: not KEY=VALUE: %q", n+1, l))
		case !known:
			out = append(out, fmt.Sprintf("line %d: the sizing script reads no %s", n+1, k))
		case seen:
			out = append(out, fmt.Sprintf("line %d: %s set twice", n+1, k))
		case k == "NODE_SIZING_ENABLED" && v != "true" && v != "false":
			out = append(out, fmt.Sprintf("line %d: NODE_SIZING_ENABLED=%q is neither true nor false", n+1, v))
		case k != "NODE_SIZING_ENABLED":
			if _, err := resource.ParseQuantity(v); err != nil {
				out = append(out, fmt.Sprintf("line %d: %s=%q: %v", n+1, k, v, err))
			}
		}
		if known {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			out = append(out, k+" is missing: the script would pass an empty value to the kubelet")
		}
	}
	return out
}
