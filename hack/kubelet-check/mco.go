package main

// MCO's part: what the Machine Config Operator does with a KubeletConfig
// before any node sees it (openshift/machine-config-operator
// pkg/controller/kubelet-config/helpers.go: validateUserKubeletConfig,
// DecodeKubeletConfig, generateKubeletIgnFiles,
// createNewKubeletDynamicSystemReservedIgnition). It merges with the same
// library MCO does (imdario/mergo, WithOverride) onto the same type
// (k8s.io/kubelet config/v1beta1).

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/imdario/mergo"
	"k8s.io/apimachinery/pkg/util/yaml"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigyaml "sigs.k8s.io/yaml"
)

// kubeletConfigSpec is the part of a KubeletConfig's spec MCO reads here.
type kubeletConfigSpec struct {
	AutoSizingReserved *bool           `json:"autoSizingReserved,omitempty"`
	LogLevel           *int32          `json:"logLevel,omitempty"`
	KubeletConfig      json.RawMessage `json:"kubeletConfig,omitempty"`
}

// mcoRender returns the kubelet.conf MCO writes for the pool and the
// node-sizing settings it leaves (the template's, or the ones the
// KubeletConfig moves there).
func mcoRender(c Case, r *Result) ([]byte, Sizing, error) {
	tmpl := &kubeletv1beta1.KubeletConfiguration{}
	if err := sigyaml.UnmarshalStrict([]byte(c.Template), tmpl); err != nil {
		return nil, c.Sizing, fmt.Errorf("template: %w", err)
	}
	if c.KubeletConfig == nil {
		out, err := json.Marshal(tmpl)
		return out, c.Sizing, err
	}
	var spec kubeletConfigSpec
	if err := json.Unmarshal(c.KubeletConfig, &spec); err != nil {
		return nil, c.Sizing, fmt.Errorf("KubeletConfig spec: %w", err)
	}
	user := &kubeletv1beta1.KubeletConfiguration{}
	if len(spec.KubeletConfig) > 0 {
		// As MCO decodes (DecodeKubeletConfig): not strict, a misspelled
		// field is dropped without a word.
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(spec.KubeletConfig), len(spec.KubeletConfig)).Decode(user); err != nil {
			return nil, c.Sizing, fmt.Errorf("could not deserialize the new Kubelet config: %w", err)
		}
		// What MCO drops silently is reported: the object does not do what it says.
		if err := sigyaml.UnmarshalStrict(spec.KubeletConfig, &kubeletv1beta1.KubeletConfiguration{}); err != nil {
			r.Warnings = append(r.Warnings, "MCO drops what it cannot decode, silently: "+err.Error())
		}
	}
	if err := mcoValidate(c.MCO, spec, user, spec.KubeletConfig); err != nil {
		return nil, c.Sizing, err
	}

	// generateKubeletIgnFiles: system-reserved cpu, memory and
	// ephemeral-storage leave kubelet.conf for node-sizing-enabled.env.
	moved := map[string]string{}
	for _, k := range []string{"memory", "cpu", "ephemeral-storage"} {
		if v, ok := user.SystemReserved[k]; ok {
			moved[k] = v
			delete(user.SystemReserved, k)
		}
	}
	user.FeatureGates = nil
	if bytes.Contains(spec.KubeletConfig, []byte(`"protectKernelDefaults":false`)) {
		tmpl.ProtectKernelDefaults = false
	}
	if err := mergo.Merge(tmpl, user, mergo.WithOverride); err != nil {
		return nil, c.Sizing, fmt.Errorf("could not merge original config and new config: %w", err)
	}
	if user.SystemReservedCgroup == "" && len(user.EnforceNodeAllocatable) > 0 && !hasSystemReservedKey(user.EnforceNodeAllocatable) {
		tmpl.SystemReservedCgroup = ""
	}
	if tmpl.ReservedSystemCPUs != "" {
		// The kubelet refuses reservedSystemCPUs beside a reserved cgroup,
		// so MCO drops system-reserved enforcement and keeps pods.
		tmpl.SystemReservedCgroup = ""
		kept, pods := []string{}, false
		for _, v := range tmpl.EnforceNodeAllocatable {
			if v == "system-reserved" || v == "system-reserved-compressible" {
				continue
			}
			pods = pods || v == "pods"
			kept = append(kept, v)
		}
		if !pods {
			kept = append([]string{"pods"}, kept...)
		}
		tmpl.EnforceNodeAllocatable = kept
	}
	if c.MCO.SystemReservedCgroupCheck && tmpl.SystemReservedCgroup != "" && tmpl.SystemCgroups != "" && tmpl.SystemReservedCgroup != tmpl.SystemCgroups {
		return nil, c.Sizing, fmt.Errorf("invalid merged configuration: systemReservedCgroup (%s) must match systemCgroups (%s)", tmpl.SystemReservedCgroup, tmpl.SystemCgroups)
	}

	sizing := c.Sizing
	switch {
	case len(moved) > 0:
		sizing = Sizing{Enabled: autoSizing(spec.AutoSizingReserved), Memory: orDefault(moved["memory"], "1Gi"), CPU: orDefault(moved["cpu"], "500m"), ES: orDefault(moved["ephemeral-storage"], "1Gi")}
	case spec.AutoSizingReserved != nil:
		sizing = Sizing{Enabled: *spec.AutoSizingReserved, Memory: "1Gi", CPU: "500m", ES: "1Gi"}
	}
	out, err := json.Marshal(tmpl)
	return out, sizing, err
}

// mcoValidate is validateUserKubeletConfig for the release's rules.
func mcoValidate(rules MCORules, spec kubeletConfigSpec, kc *kubeletv1beta1.KubeletConfiguration, raw json.RawMessage) error {
	if spec.LogLevel != nil && (int(*spec.LogLevel) < rules.LogLevelMin || *spec.LogLevel > 10) {
		return fmt.Errorf("KubeletConfig's LogLevel is not valid [%d,10]", rules.LogLevelMin)
	}
	switch {
	case kc.CgroupDriver != "":
		return fmt.Errorf("KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: %s", kc.CgroupDriver)
	case len(kc.ClusterDNS) > 0:
		return fmt.Errorf("KubeletConfiguration: clusterDNS is not allowed to be set, but contains: %s", kc.ClusterDNS)
	case kc.ClusterDomain != "":
		return fmt.Errorf("KubeletConfiguration: clusterDomain is not allowed to be set, but contains: %s", kc.ClusterDomain)
	case len(kc.FeatureGates) > 0:
		return fmt.Errorf("KubeletConfiguration: featureGates is not allowed to be set, but contains: %v", kc.FeatureGates)
	case rules.RejectSwapFields && kc.FailSwapOn != nil:
		return fmt.Errorf("KubeletConfiguration: failSwapOn is not allowed to be set")
	case rules.RejectSwapFields && kc.MemorySwap.SwapBehavior != "":
		return fmt.Errorf("KubeletConfiguration: swapBehavior is not allowed to be set")
	case len(kc.SystemReserved) > 0 && spec.AutoSizingReserved != nil && *spec.AutoSizingReserved:
		return fmt.Errorf("KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together")
	case rules.SystemReservedCgroupCheck && kc.SystemReservedCgroup != "" && kc.SystemCgroups != "" && kc.SystemReservedCgroup != kc.SystemCgroups:
		return fmt.Errorf("KubeletConfiguration: systemReservedCgroup must match systemCgroups")
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys) // YAML input leaves it empty; staticPodPath is then judged by value
	_, set := keys["staticPodPath"]
	switch {
	case !rules.StaticPodPathEmptyOnly && kc.StaticPodPath != "":
		return fmt.Errorf("KubeletConfiguration: staticPodPath is not allowed to be set")
	case rules.StaticPodPathEmptyOnly && rules.ControlPlane && set:
		return fmt.Errorf("KubeletConfiguration: staticPodPath is not allowed on control-plane pools")
	case rules.StaticPodPathEmptyOnly && kc.StaticPodPath != "":
		return fmt.Errorf("KubeletConfiguration: staticPodPath may only be set to \"\" (static pods off)")
	}
	return nil
}

func hasSystemReservedKey(keys []string) bool {
	for _, v := range keys {
		if v == "system-reserved" || v == "system-reserved-compressible" {
			return true
		}
	}
	return false
}

// autoSizing is NODE_SIZING_ENABLED beside user-defined system-reserved
// values (createNewKubeletDynamicSystemReservedIgnition: false unless set).
func autoSizing(b *bool) bool { return b != nil && *b }

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
