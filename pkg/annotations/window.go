package annotations

import "github.com/kubevirt/virt-platform-autopilot/pkg/schedule"

// ParseDisruptionWindow reads the HCO's disruption window: absent, no
// window (writes go at any time); present, a schedule (pkg/schedule). A
// value not understood is an *Invalid, never "any time": whatever reads it
// must hold reboot-causing writes until it is fixed.
func ParseDisruptionWindow(value string, present bool) (schedule.Schedule, error) {
	if !present {
		return schedule.Schedule{}, nil
	}
	s, err := schedule.Parse(value)
	if err != nil {
		return schedule.Schedule{}, &Invalid{Annotation: DisruptionWindow, Value: value, Detail: err.Error(), Accepted: schedule.Accepted}
	}
	return s, nil
}
