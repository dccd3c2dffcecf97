// Package notrun records tests that could not run here (a tool or the
// vendors' CRDs missing) in the file $NOT_RUN_LOG, which 'make test' prints
// at its end, so a green run never hides what it left out. Under CI=true
// the callers fail instead of skipping. It has no dependencies, so every
// suite can use it.
package notrun

import (
	"fmt"
	"os"
	"sync"
)

var mu sync.Mutex

// Record appends "what: why" to $NOT_RUN_LOG (nothing when it is unset).
func Record(what, why string) {
	path := os.Getenv("NOT_RUN_LOG")
	if path == "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s: %s\n", what, why)
	_ = f.Close() // a note about what did not run: nothing to do if it fails
}
