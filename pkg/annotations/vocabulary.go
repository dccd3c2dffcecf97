package annotations

import (
	"errors"
	"fmt"
	"strings"
)

// Invalid is an annotation value the autopilot does not understand. It
// names the annotation, the value and what is accepted, so an Event, a
// metric, a log line and the CLI's stderr all say the same; whatever reads
// the annotation changes nothing because of it.
type Invalid struct {
	Annotation string
	Value      string
	// Accepted says what the annotation takes.
	Accepted string
	// Detail says what is wrong, when more than "not accepted".
	Detail string
	// Err is the underlying cause, for errors.Is (ErrProtected, ...).
	Err error
}

func (e *Invalid) Error() string {
	v := e.Value
	if len(v) > 200 {
		v = v[:200] + "..."
	}
	msg := fmt.Sprintf("annotation %s=%q is not understood", e.Annotation, v)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + "; accepted: " + e.Accepted
}

func (e *Invalid) Unwrap() error { return e.Err }

// AsInvalid finds an *Invalid in err's chain.
func AsInvalid(err error) (*Invalid, bool) {
	var inv *Invalid
	ok := errors.As(err, &inv)
	return inv, ok
}

// BoolAccepted is the vocabulary of every boolean annotation. Kubernetes
// annotation values are strings, so what an admin types is whatever their
// tool writes for a boolean: kubectl and Go flags take strconv.ParseBool's
// spellings (true, 1, t), YAML 1.1 writers and people take yes/no and on/off.
// Case and surrounding whitespace do not matter.
const BoolAccepted = `true/false, yes/no, y/n, on/off, t/f, 1/0 (any case)`

var bools = map[string]bool{
	"true": true, "t": true, "yes": true, "y": true, "on": true, "1": true,
	"false": false, "f": false, "no": false, "n": false, "off": false, "0": false,
}

// ParseBool reads a boolean annotation value (see BoolAccepted); anything
// else is an *Invalid naming key.
func ParseBool(key, value string) (bool, error) {
	if b, ok := bools[strings.ToLower(strings.TrimSpace(value))]; ok {
		return b, nil
	}
	return false, &Invalid{Annotation: key, Value: value, Accepted: BoolAccepted}
}

// ParseSwitch reads a feature switch (platform.kubevirt.io/enable-<name>):
// absent is off; present, it must be a boolean. A value that is not
// understood is an error, never "off": the assets that read it are left
// exactly as they are until it is fixed.
func ParseSwitch(key, value string, present bool) (bool, error) {
	if !present {
		return false, nil
	}
	return ParseBool(key, value)
}

// Protects reports whether a protective marker annotation (shared,
// adopted) is set: present with any value but a false spelling. A value not
// understood keeps the protection, as a typo must never lower one.
func Protects(ann map[string]string, key string) bool {
	v, ok := ann[key]
	if !ok {
		return false
	}
	b, err := ParseBool(key, v)
	return err != nil || b
}

// ModeValue is the parsed platform.kubevirt.io/mode annotation.
type ModeValue string

// The modes a managed object may be in.
const (
	// ModeManaged: the default (no annotation, or "managed").
	ModeManaged ModeValue = "managed"
	// ModeUnmanagedValue: the object is never written or deleted.
	ModeUnmanagedValue ModeValue = ModeUnmanaged
	// ModeReportOnly: the object is evaluated and compared as if applied,
	// and reported Drifted or compliant; never written or deleted.
	ModeReportOnly ModeValue = "report-only"
)

// ModeAccepted is the mode annotation's vocabulary.
const ModeAccepted = `managed, unmanaged, report-only (any case)`

// ParseMode reads the mode annotation of an object. A value that is not
// understood is an error, and whoever reads it must leave the object alone
// (never write it, never delete it): the safe reading of an opt-out typo.
func ParseMode(ann map[string]string) (ModeValue, error) {
	v, ok := ann[Mode]
	if !ok {
		return ModeManaged, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "managed":
		return ModeManaged, nil
	case "unmanaged":
		return ModeUnmanagedValue, nil
	case "report-only":
		return ModeReportOnly, nil
	}
	return "", &Invalid{Annotation: Mode, Value: v, Accepted: ModeAccepted}
}

// LeftAlone reports whether an object's mode forbids writing or deleting
// it: unmanaged, report-only, or a mode that is not understood.
func LeftAlone(ann map[string]string) bool {
	m, err := ParseMode(ann)
	return err != nil || m == ModeUnmanagedValue || m == ModeReportOnly
}

// SplitList splits a list annotation into its entries: separated by commas
// and/or newlines (GitOps tools write block scalars, one entry per line),
// each trimmed, empty ones dropped.
func SplitList(value string) []string {
	fields := strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' })
	out := fields[:0]
	for _, f := range fields {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ActivationAccepted is the autopilot annotation's vocabulary.
const ActivationAccepted = `absent or a true spelling (everything), a false spelling (paused), report-only (everything evaluated and compared, nothing written or deleted), or asset, group and feature names separated by commas and/or newlines`

// ActivationValue is the parsed platform.kubevirt.io/autopilot annotation.
// Names are resolved against the catalog by its reader.
type ActivationValue struct {
	// All: absent, empty or a true spelling: the zero-configuration default.
	All bool
	// Paused: a false spelling.
	Paused bool
	// ReportOnly: "report-only": everything is evaluated and compared as
	// if applied, nothing is written or deleted.
	ReportOnly bool
	// Names lists the entries of a partial activation.
	Names []string
}

// ParseActivation reads the autopilot switch. Every value means something:
// a list that names nothing known activates nothing (its reader reports
// the unknown names), so a typo of "false" never writes.
func ParseActivation(value string, present bool) ActivationValue {
	if !present || strings.TrimSpace(value) == "" {
		return ActivationValue{All: true}
	}
	if b, err := ParseBool(Autopilot, value); err == nil {
		return ActivationValue{All: b, Paused: !b}
	}
	names := SplitList(value)
	for _, n := range names {
		// report-only anywhere in a list means report-only for all of it:
		// "report-only, kubelet-worker" must never write kubelet-worker.
		if strings.EqualFold(n, "report-only") {
			return ActivationValue{ReportOnly: true}
		}
	}
	return ActivationValue{Names: names}
}
