package nodecheck

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// multipathManual is multipath-tools' manual of its configuration, as the
// installed package ships it: the keywords each section recognizes.
const multipathManual = "/usr/share/man/man5/multipath.conf.5.gz"

// multipathConfDir is multipathd's config_dir on RHEL/RHCOS (the default
// the manual states): every .conf file there is read after multipath.conf.
const multipathConfDir = "/etc/multipath/conf.d/"

// multipathKeywords reads, from the manual's "<section> section", the
// keywords it recognizes: each is a ".B keyword" line right after a ".TP".
func multipathKeywords(manual []byte, section string) map[string]bool {
	out := map[string]bool{}
	in, afterTP := false, false
	for _, l := range strings.Split(string(manual), "\n") {
		switch {
		case strings.HasPrefix(l, ".SH"):
			in = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, ".SH")), `"`) == section+" section"
		case in && strings.HasPrefix(l, ".TP"):
			afterTP = true
			continue
		case in && afterTP && strings.HasPrefix(l, ".B "):
			out[strings.TrimSpace(strings.TrimPrefix(l, ".B "))] = true
		}
		afterTP = false
	}
	return out
}

// multipathSections are the section keywords the manual's SYNTAX lists.
var multipathSections = []string{"defaults", "blacklist", "blacklist_exceptions", "multipaths", "devices", "overrides"}

var reservationKey = regexp.MustCompile(`^(file|(0x)?[0-9A-Fa-f]{1,16}(:aptpl)?)$`)

// checkMultipath reads a config_dir drop-in as multipath.conf(5) says
// multipathd does: "<section> {" with the brace on the line, "<attribute>
// <value>" on one line (a simple word or one quoted string), "}" alone on
// its line, "#" and "!" starting comments. Every section must be one the
// manual lists and every defaults attribute one its defaults section
// recognizes (an unknown keyword is only logged by multipathd, and the
// setting silently missing).
func checkMultipath(path string, data, manual []byte) []string {
	var out []string
	if !strings.HasPrefix(path, multipathConfDir) || !strings.HasSuffix(path, ".conf") {
		out = append(out, fmt.Sprintf("not a .conf file in multipathd's config_dir %s: never read", multipathConfDir))
	}
	defaults := multipathKeywords(manual, "defaults")
	if len(defaults) == 0 {
		return append(out, "the manual lists no defaults keyword: its layout changed, fix multipathKeywords")
	}
	var stack []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if i := strings.IndexAny(l, "#!"); i >= 0 && !strings.Contains(l[:i], `"`) {
			l = l[:i]
		}
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case len(f) == 1 && f[0] == "}":
			if len(stack) == 0 {
				out = append(out, fmt.Sprintf("line %d: a closing brace without a section", n))
				continue
			}
			stack = stack[:len(stack)-1]
		case len(f) == 2 && f[1] == "{":
			if len(stack) == 0 && !contains(multipathSections, f[0]) {
				out = append(out, fmt.Sprintf("line %d: multipath knows no section %s", n, f[0]))
			}
			stack = append(stack, f[0])
		case len(f) == 2 && len(stack) > 0:
			if stack[0] == "defaults" && !defaults[f[0]] {
				out = append(out, fmt.Sprintf("line %d: the defaults section has no keyword %s (%s)", n, f[0], multipathManual))
			}
			if f[0] == "reservation_key" && !reservationKey.MatchString(f[1]) {
				out = append(out, fmt.Sprintf("line %d: reservation_key %q is neither file nor an 8-byte key", n, f[1]))
			}
		default:
			out = append(out, fmt.Sprintf("line %d: not <section> {, <attribute> <value> inside a section, or }: %q", n, sc.Text()))
		}
	}
	if len(stack) > 0 {
		out = append(out, fmt.Sprintf("section %s is not closed", strings.Join(stack, " ")))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readManual gunzips the installed manual, or fails (CI) / skips.
func readManual(t *testing.T) []byte {
	t.Helper()
	f, err := os.Open(multipathManual)
	if err != nil {
		missing(t, multipathManual+" is not installed (Debian package multipath-tools)")
		return nil
	}
	defer func() { _ = f.Close() }() // read only: nothing to flush
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The checker refuses what multipathd would not read as meant.
func TestMultipathChecker(t *testing.T) {
	manual := readManual(t)
	good := "# c\ndefaults {\n\treservation_key file\n}\n"
	if p := checkMultipath(multipathConfDir+"a.conf", []byte(good), manual); len(p) > 0 {
		t.Errorf("a valid drop-in refused: %v", p)
	}
	for name, c := range map[string]struct{ path, data string }{
		"misspelt keyword":  {multipathConfDir + "a.conf", "defaults {\n\treservation_kye file\n}\n"},
		"unknown section":   {multipathConfDir + "a.conf", "default {\n\treservation_key file\n}\n"},
		"unclosed":          {multipathConfDir + "a.conf", "defaults {\n\treservation_key file\n"},
		"brace on its line": {multipathConfDir + "a.conf", "defaults\n{\n\treservation_key file\n}\n"},
		"bad key":           {multipathConfDir + "a.conf", "defaults {\n\treservation_key files\n}\n"},
		"not .conf":         {multipathConfDir + "a.cfg", good},
		"outside conf.d":    {"/etc/multipath/a.conf", good},
	} {
		if p := checkMultipath(c.path, []byte(c.data), manual); len(p) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

var (
	manualOnce sync.Once
	manualData []byte
)

// multipathManualOnce is readManual, read once per test binary.
func multipathManualOnce(t *testing.T) []byte {
	t.Helper()
	if manualData == nil {
		if _, err := os.Stat(multipathManual); err != nil {
			missing(t, multipathManual+" is not installed (Debian package multipath-tools)")
		}
		manualOnce.Do(func() { manualData = readManual(t) })
	}
	return manualData
}
