// Command demo shows the autopilot at work without a cluster: a kube-apiserver
// and etcd on loopback (KUBEBUILDER_ASSETS, 'make envtest'), the CRDs the
// assets need, a sample HyperConverged and Nodes, and the autopilot binary
// running against them. 'make demo' runs it.
//
//	demo start --autopilot bin/virt-platform-autopilot   foreground until Ctrl-C (DEMO_DETACH=1: background)
//	demo stop                                          stop every detached demo
//
// Each demo lives in its own folder under --state-dir (ports are chosen free),
// so a second demo never collides with a first; stopping removes the folder.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: demo start|stop [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	stateDir := fs.String("state-dir", "_output/demo", "folder holding one subfolder per running demo")
	autopilot := fs.String("autopilot", "bin/virt-platform-autopilot", "the autopilot binary to run")
	runDir := fs.String("run-dir", "", "internal: the demo folder a detached demo serves")
	_ = fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "start":
		err = start(*stateDir, *autopilot, os.Getenv("DEMO_DETACH") == "1")
	case "serve": // the detached child
		err = serveDetached(*runDir, *autopilot)
	case "stop":
		err = stopAll(*stateDir)
	default:
		err = fmt.Errorf("unknown command %q: want start or stop", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func start(stateDir, autopilot string, detach bool) error {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run 'make demo' (it builds kube-apiserver and etcd with 'make envtest')")
	}
	autopilot, err := filepath.Abs(autopilot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(stateDir, time.Now().Format("20060102-150405-"))
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if !detach {
		return serveForeground(dir, autopilot)
	}
	return spawn(dir, autopilot)
}

// spawn starts the demo in a new session, waits until it is ready or failed,
// and prints what it prints.
func spawn(dir, autopilot string) error {
	// Read and write: the child removes its folder when it fails, and the
	// log is still read through this handle to say why.
	logf, err := os.OpenFile(filepath.Join(dir, "demo.log"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	// The lock file exists before the child does: stop never mistakes a
	// starting demo for a foreground one.
	if err := os.WriteFile(filepath.Join(dir, lockFile), nil, 0o644); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "serve", "--run-dir", dir, "--autopilot", autopilot)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // survives the terminal and make
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(readyTimeout + time.Minute)
	for {
		select {
		case err := <-exited:
			_, _ = logf.Seek(0, io.SeekStart)
			log, _ := io.ReadAll(logf)
			_ = os.RemoveAll(dir)
			return fmt.Errorf("the demo stopped before it was ready (%w):\n%s", err, log)
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the demo was not ready in time: see %s/demo.log; 'make demo-stop' cleans up", dir)
		case <-time.After(200 * time.Millisecond):
		}
		if summary, err := os.ReadFile(filepath.Join(dir, readyFile)); err == nil {
			fmt.Print(string(summary))
			fmt.Printf("\nThe demo keeps running in the background (pid %d). Stop it, and remove its files, with:\n  make demo-stop\n", cmd.Process.Pid)
			return nil
		}
	}
}

func serveForeground(dir, autopilot string) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	d, err := up(dir, autopilot, os.Stdout)
	if err != nil {
		d.down()
		return err
	}
	fmt.Print(d.summary)
	fmt.Println("\nThe autopilot's log follows (also in " + d.logPath + "). Ctrl-C stops the demo and removes its files.")
	done := make(chan struct{})
	go d.follow(os.Stdout, done)
	select {
	case <-stop:
	case <-d.exited:
		fmt.Println("the autopilot exited; stopping the demo")
	}
	close(done)
	d.down()
	return nil
}

func serveDetached(dir, autopilot string) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// Held until this process exits (the kernel releases it then, on Linux
	// and macOS alike): stop tells a live demo from a dead one by it,
	// without /proc.
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("another demo serves %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	d, err := up(dir, autopilot, os.Stdout)
	if err != nil {
		d.down()
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(d.summary), 0o644); err != nil {
		d.down()
		return err
	}
	select {
	case <-stop:
	case <-d.exited:
	}
	d.down()
	return nil
}

const (
	pidFile   = "demo.pid"
	lockFile  = "demo.lock"
	readyFile = "ready.txt"
)

// stopAll stops every detached demo under stateDir and says so only once
// each has exited: a demo is alive while it holds its lock file.
func stopAll(stateDir string) error {
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("no demo is running")
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	seen := 0
	for _, e := range entries {
		dir := filepath.Join(stateDir, e.Name())
		lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0)
		if err != nil {
			continue // a foreground demo: Ctrl-C stops it
		}
		seen++
		if err := stopOne(dir, lock); err != nil {
			errs = append(errs, err)
		}
		_ = lock.Close()
	}
	if seen == 0 {
		fmt.Println("no detached demo is running")
	}
	return errors.Join(errs...)
}

// stopOne stops the demo serving dir, whose lock file is open as lock.
func stopOne(dir string, lock *os.File) error {
	fd := int(lock.Fd())
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		// Nobody holds it: the demo died; its pid may be another's now.
		_ = os.RemoveAll(dir)
		fmt.Println("removed the files of demo", dir, "(it had already stopped)")
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, pidFile))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("demo %s is running but names no process: stop it by hand", dir)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop demo %s (pid %d): %w", dir, pid, err)
	}
	// The lock is released when the process has exited (its children
	// stopped first): only then is it stopped. (A stop racing a start
	// that has not locked yet removes its folder, so that demo fails to
	// start: none is left running unseen.)
	deadline := time.Now().Add(90 * time.Second)
	for syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("demo %s (pid %d) has not exited 90s after SIGTERM: it may still be running", dir, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = os.RemoveAll(dir)
	fmt.Println("stopped demo", dir)
	return nil
}
