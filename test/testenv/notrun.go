package testenv

import (
	"fmt"
	"os"
	"sync"
)

var notRunMu sync.Mutex

// NotRun records a test or spec that could not run here (a tool or the
// vendors' CRDs missing) in the file $NOT_RUN_LOG, which 'make test' prints
// at its end, so a green run never hides what it left out. Under CI=true
// the callers fail instead of skipping.
func NotRun(what, why string) {
	path := os.Getenv("NOT_RUN_LOG")
	if path == "" {
		return
	}
	notRunMu.Lock()
	defer notRunMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s: %s\n", what, why)
	_ = f.Close() // a note about what did not run: nothing to do if it fails
}
