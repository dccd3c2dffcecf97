//go:build !unix

package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execve runs path as a child with this process's streams and exits with
// its code: there is no exec(2) here.
func execve(path string, argv []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		return err
	}
	os.Exit(0)
	return nil
}
