package testenv

import "github.com/kubevirt/virt-platform-autopilot/test/notrun"

// NotRun records a test or spec that could not run here (notrun.Record).
func NotRun(what, why string) { notrun.Record(what, why) }
