//go:build unix

package cli

import (
	"os"
	"syscall"
)

// execve replaces this process with path; it returns only on failure.
func execve(path string, argv []string) error {
	return syscall.Exec(path, argv, os.Environ())
}
