package annotations

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Values read from the cluster (HCO annotations and fields, live and
// looked-up objects, storage classes, CRD enums) are data: before a
// template puts one into an object or a node's configuration it must have
// the shape its use needs, so no value can add structure (a YAML key, a
// second kernel argument, a unit line).

// What each shape accepts, for error messages.
const (
	StorageClassNameAccepted = `a storage class name: a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)`
	DNSSubdomainAccepted     = `a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)`
	PCIIDAccepted            = `a PCI vendor:device id, four hex digits each (10de:1eb8, any case)`
	IntegerAccepted          = `an integer`
	DateAccepted             = `a date, YYYY-MM-DD`
	EnumAccepted             = `an enum value: letters and digits, with '.', '_' or '-' between them, at most 63 characters`
	LabelsAccepted           = `a map of label keys (example.com/name) to label values (at most 63 letters, digits, '-', '_' or '.')`
)

// Malformed is a value read from the cluster, not from an annotation, that
// does not have the shape its use needs (an HCO spec field, a live object's
// field, a storage class name). An annotation's is an *Invalid instead.
type Malformed struct {
	// What names the value: where it was read.
	What     string
	Value    string
	Accepted string
	Detail   string
}

func (e *Malformed) Error() string {
	msg := fmt.Sprintf("%s %q is not accepted", e.What, truncate(e.Value))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + "; accepted: " + e.Accepted
}

func truncate(v string) string {
	if len(v) > 200 {
		return v[:200] + "..."
	}
	return v
}

// malformed describes v, of any type, in a Malformed.
func malformed(what string, v any, accepted, detail string) *Malformed {
	s, ok := v.(string)
	if !ok {
		s = fmt.Sprintf("%v", v)
		if detail == "" {
			detail = fmt.Sprintf("a %T, not a string", v)
		}
	}
	return &Malformed{What: what, Value: s, Accepted: accepted, Detail: detail}
}

// ParseStorageClassName reads an annotation naming a storage class:
// surrounding whitespace is dropped, empty names none (""), anything else
// must be a DNS-1123 subdomain or it is an *Invalid naming key.
func ParseStorageClassName(key, value string) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", nil
	}
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return "", &Invalid{Annotation: key, Value: value, Accepted: StorageClassNameAccepted, Detail: strings.Join(errs, "; ")}
	}
	return v, nil
}

// ParseDNSSubdomain checks an object name read from the cluster (a
// storage class, a Secret): a string that is a DNS-1123 subdomain.
func ParseDNSSubdomain(what string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", malformed(what, v, DNSSubdomainAccepted, "")
	}
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return "", malformed(what, s, DNSSubdomainAccepted, strings.Join(errs, "; "))
	}
	return s, nil
}

var pciID = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$`)

// ParsePCIID checks a PCI vendor:device id and returns it in lower case,
// as the kernel's vfio-pci.ids takes it. Surrounding whitespace is not
// dropped: KubeVirt would not match such a selector either.
func ParsePCIID(what string, v any) (string, error) {
	s, ok := v.(string)
	if !ok || !pciID.MatchString(s) {
		return "", malformed(what, v, PCIIDAccepted, "")
	}
	return strings.ToLower(s), nil
}

// ParseInteger checks a number read from the cluster: any integer type,
// or an integral float or json.Number (how a decoder may hand it over).
// A string is not a number, even "5": it would change the field's type.
func ParseInteger(what string, v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint32:
		return int64(n), nil
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), nil
		}
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n), nil
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
	}
	return 0, malformed(what, v, IntegerAccepted, "")
}

// date is a calendar date as the LokiStack CRD admits a schema's
// effectiveDate (loki.grafana.com_lokistacks.yaml, StorageSchemaEffectiveDate:
// pattern ^([0-9]{4,})([-]([0-9]{2})){2}$).
var date = regexp.MustCompile(`^([0-9]{4,})([-]([0-9]{2})){2}$`)

// ParseDate checks a date read from the cluster (a schema's effective
// date).
func ParseDate(what string, v any) (string, error) {
	s, ok := v.(string)
	if !ok || !date.MatchString(s) {
		return "", malformed(what, v, DateAccepted, "")
	}
	return s, nil
}

var enumValue = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// ParseEnumValue checks a value of a CRD enum (read from the CRD or from
// a live object the enum admitted).
func ParseEnumValue(what string, v any) (string, error) {
	s, ok := v.(string)
	if !ok || !enumValue.MatchString(s) {
		return "", malformed(what, v, EnumAccepted, "")
	}
	return s, nil
}

// ParseLabels checks a label map (a node selector): absent (nil) is
// empty; keys and values must be valid label keys and values.
func ParseLabels(what string, v any) (map[string]any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed(what, v, LabelsAccepted, fmt.Sprintf("a %T, not a map", v))
	}
	for k, val := range m {
		if errs := content.IsLabelKey(k); len(errs) > 0 {
			return nil, malformed(what+" key", k, LabelsAccepted, strings.Join(errs, "; "))
		}
		s, ok := val.(string)
		if !ok {
			return nil, malformed(what+"["+k+"]", val, LabelsAccepted, "")
		}
		if errs := content.IsLabelValue(s); len(errs) > 0 {
			return nil, malformed(what+"["+k+"]", s, LabelsAccepted, strings.Join(errs, "; "))
		}
	}
	return m, nil
}
