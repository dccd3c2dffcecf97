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
	readyFile = "ready.txt"
)

// stopAll stops every detached demo under stateDir and waits until each has
// removed its folder.
func stopAll(stateDir string) error {
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("no demo is running")
		return nil
	}
	if err != nil {
		return err
	}
	stopped := 0
	for _, e := range entries {
		dir := filepath.Join(stateDir, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue // a foreground demo: Ctrl-C stops it
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		if !servesDir(pid, dir) {
			pid = 0 // the demo died and its pid may belong to another process now
		}
		if p, err := os.FindProcess(pid); err == nil && pid > 0 && p.Signal(syscall.SIGTERM) == nil {
			waitGone(dir, 60*time.Second)
			waitExited(pid, 10*time.Second)
		}
		_ = os.RemoveAll(dir) // a demo that died leaves its folder behind
		stopped++
		fmt.Println("stopped demo", dir)
	}
	if stopped == 0 {
		fmt.Println("no detached demo is running")
	}
	return nil
}

// servesDir reports whether pid is the demo serving dir (its command line
// names the folder).
func servesDir(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	abs, _ := filepath.Abs(dir)
	return strings.Contains(string(cmdline), "serve") && strings.Contains(string(cmdline), abs)
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust the signal
	}
	// pid (comm) STATE ...: comm may hold spaces, so read after the last ')'.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

func waitExited(pid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && running(pid) {
		time.Sleep(50 * time.Millisecond)
	}
}

func waitGone(dir string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
