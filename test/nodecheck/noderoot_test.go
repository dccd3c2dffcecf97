package nodecheck

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// A node root is a folder laid out as a node's / after the MCD wrote the
// pool's rendered config (pkg/daemon/update.go: writeFiles, writeUnits):
// our files with their modes, our units in /etc/systemd/system and their
// drop-ins in <unit>.d/. Around them, what RHCOS and MCO provide that our
// units name: systemd's own units (copied from the host's systemd package,
// the same major release as RHEL 9's), MCO's kubelet.service for the
// release and pool, and stub programs at the paths RHCOS ships them, so
// systemd-analyze verify finds an executable exactly where a node has
// one and nowhere else.

// rhcosPrograms are programs our units run that RHCOS ships at these paths
// (util-linux swapon, procps-ng sysctl, systemd's systemd-inhibit, grep,
// bash; /bin and /sbin are links into /usr on RHCOS). A unit naming a
// program at another path, or one no MachineConfig writes, fails verify.
var rhcosPrograms = []string{"/usr/bin/bash", "/usr/bin/grep", "/usr/sbin/swapon", "/usr/sbin/sysctl", "/usr/bin/systemd-inhibit", "/usr/bin/kubelet"}

// mcoUnits are the units MCO's templates add that ours order against.
var mcoUnits = map[string]string{
	"kubelet-dependencies.target": "[Unit]\nDescription=Dependencies necessary to run kubelet\n",
	"crio.service":                "[Unit]\nDescription=Container Runtime Interface for OCI (CRI-O)\n\n[Service]\nExecStart=/usr/bin/crio\n",
}

// fileContents decodes a file's source as the MCD does
// (DecodeIgnitionFileContents: a data URL, gunzipped when compressed).
func fileContents(f t35.File) ([]byte, error) {
	if f.Contents.Source == nil {
		return nil, nil
	}
	u, err := dataurl.DecodeString(*f.Contents.Source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if f.Contents.Compression != nil && *f.Contents.Compression == "gzip" {
		r, err := gzip.NewReader(bytes.NewReader(u.Data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		return io.ReadAll(r)
	}
	return u.Data, nil
}

// writeNodeRoot lays out root for cfg on release rel's pool. It returns
// the units to verify: ours and those we add drop-ins to.
func writeNodeRoot(root string, cfg t35.Config, rel release, pool string) ([]string, error) {
	for _, l := range []struct{ name, target string }{{"bin", "usr/bin"}, {"sbin", "usr/sbin"}} {
		if err := os.MkdirAll(filepath.Join(root, l.target), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(l.target, filepath.Join(root, l.name)); err != nil {
			return nil, err
		}
	}
	if err := copyTree("/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/system")); err != nil {
		return nil, fmt.Errorf("systemd's units (Debian package systemd): %w", err)
	}
	etc := filepath.Join(root, "etc/systemd/system")
	units := map[string]string{"kubelet.service": rel.kubeletUnit(pool)}
	for k, v := range mcoUnits {
		units[k] = v
	}
	for name, body := range units {
		if err := writeFile(filepath.Join(etc, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	for _, p := range rhcosPrograms {
		if err := writeFile(filepath.Join(root, p), []byte("#!/usr/bin/bash\n"), 0o755); err != nil {
			return nil, err
		}
	}
	for _, f := range cfg.Storage.Files {
		data, err := fileContents(f)
		if err != nil {
			return nil, err
		}
		mode := 0o644 // the MCD's default file mode
		if f.Mode != nil {
			mode = *f.Mode
		}
		if err := writeFile(filepath.Join(root, f.Path), data, os.FileMode(mode)); err != nil {
			return nil, err
		}
	}
	var verify []string
	for _, u := range cfg.Systemd.Units {
		if u.Mask != nil && *u.Mask {
			continue // a link to /dev/null: nothing to verify
		}
		if u.Contents != nil {
			if err := writeFile(filepath.Join(etc, u.Name), []byte(*u.Contents), 0o644); err != nil {
				return nil, err
			}
		}
		for _, d := range u.Dropins {
			if d.Contents == nil {
				continue // the MCD deletes a drop-in without contents
			}
			if err := writeFile(filepath.Join(etc, u.Name+".d", d.Name), []byte(*d.Contents), 0o644); err != nil {
				return nil, err
			}
		}
		verify = append(verify, u.Name)
	}
	sort.Strings(verify)
	return verify, nil
}

func writeFile(p string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode) // the umask must not change what the MCD sets
}

// copyTree copies regular files and symlinks (systemd's .wants links).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
}

// mergedConfig is the pool's rendered config under Ignition 3.5, for the
// checks that read payloads (the same files and units under 3.4).
func mergedConfig(p *poolSet) (t35.Config, []string) {
	m, errs := renderPool(p, "3.5")
	cfg, _ := m.(t35.Config)
	return cfg, errs
}

// ourUnitNames lists the units a config writes or adds drop-ins to, for messages.
func ourUnitNames(cfg t35.Config) string {
	var n []string
	for _, u := range cfg.Systemd.Units {
		n = append(n, u.Name)
	}
	return strings.Join(n, ", ")
}
