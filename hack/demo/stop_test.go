package main

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as a detached demo when DEMO_TEST_SERVE names a folder:
// it holds the lock as serveDetached does, and exits a moment after SIGTERM.
func TestMain(m *testing.M) {
	if dir := os.Getenv("DEMO_TEST_SERVE"); dir != "" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM)
		lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil || syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			os.Exit(3)
		}
		_ = os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
		<-stop
		time.Sleep(300 * time.Millisecond) // the control plane going down
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stop stops a live demo and says so only after it has exited.
func TestStopWaitsForTheDemoToExit(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "demo-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "DEMO_TEST_SERVE="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, pidFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake demo did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := stopAll(state); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the demo did not exit cleanly: %v", err)
		}
	default:
		t.Fatal("stop returned before the demo exited")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("its folder is left: %v", err)
	}
}

// A demo that died leaves a pid that may be another process's now: that
// process is never signalled; the folder is removed.
func TestStopNeverSignalsADeadDemosPid(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "demo-2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The pid is this test's own: a SIGTERM would end the test run.
	for name, content := range map[string]string{lockFile: "", pidFile: strconv.Itoa(os.Getpid())} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := stopAll(state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("its folder is left: %v", err)
	}
}
