package shipped

import "strings"

// release is one release of the shipped autopilot the HCO pinned, as its
// code reads the HCO's platform.kubevirt.io/autopilot switch.
type release struct {
	Version string
	// Digests are its image's digests as the HCO pinned them
	// (kubevirt/hyperconverged-cluster-operator deploy/images.csv,
	// AUTOPILOT_IMAGE row, at each commit that bumped
	// hack/config AUTOPILOT_VERSION).
	Digests []string
	// ExactTrue: it acts only on the exact value "true", untrimmed
	// (openshift-virtualization/virt-platform-autopilot
	// pkg/overrides/validation.go IsAutopilotEnabled, v0.0.4 to v0.0.6).
	// Otherwise it reads the value trimmed (ParseAutopilotScope, v0.0.7
	// on): empty is idle, "true" is everything, and any other value is an
	// allowlist of its asset names, "false" explicitly idle from v0.0.11
	// and matching none of its assets before.
	ExactTrue bool
}

// acts reports whether the release writes anything under the switch as
// set. A list is taken to name one of its assets: the release's own
// names are not judged here, so a list that names none of them still
// holds this autopilot (the safe side).
func (r release) acts(raw string, set bool) bool {
	if !set {
		return false
	}
	if r.ExactTrue {
		return raw == "true"
	}
	v := strings.TrimSpace(raw)
	return v != "" && v != "false"
}

// releases are the shipped autopilot's releases the HCO pinned, each idle
// unless the switch is set (platform_controller.go Reconcile: without the
// switch it logs and requeues, writing nothing), as of HCO main 8fd98381
// (v0.1.2) and release-1.18 366be1f6 (v0.0.13). A release not listed is
// Unknown: newer catalogs of the public implementation are on by default.
var releases = []release{
	{Version: "v0.0.4", ExactTrue: true, Digests: []string{"cdb613f4ceddd10b58cce9bd38e0819291db916328e5a063ee701b7c27a0cedc"}},
	{Version: "v0.0.6", ExactTrue: true, Digests: []string{"3acbec5d0ee7c4c475e3517f1120d40aecca67dccb785f1e56689283678abfbc"}},
	{Version: "v0.0.8", Digests: []string{"73fc7615ecde2cd1335011b7bcfb49856d8c686dccb161d82c245a4ac7d799cf"}},
	{Version: "v0.0.9", Digests: []string{"13bd63b12d578c78159bd05c588b314ca205502a4e092242fcf6cb5e5770d956"}},
	// HCO v1.18.0 and v1.18.1.
	{Version: "v0.0.10", Digests: []string{"ba94138eb74ebf3508dd1f2722773d0f1091aa683947ff1a1a5690168fed6384"}},
	{Version: "v0.0.11", Digests: []string{"b17d7a731a57522105de798fa638e25023f10bdb5a59a1ac55a20c2be49f1eb0"}},
	{Version: "v0.0.12", Digests: []string{"6360f35dcd27f0c3f256217089ceb713d2341713e39ef7e35eb7cb0c3def3d13"}},
	{Version: "v0.0.13", Digests: []string{"c57fcd8ebd11d8646dd6932209b4809e6d7971bb4abebbb940851aa434672001"}},
	{Version: "v0.1.0", Digests: []string{"5ba94d577537588f6bb83833e9af4cc5500b10cc80005473942a0aa4645a00c1"}},
	{Version: "v0.1.1", Digests: []string{"242b054acd0e2f9825fe44caebf1f0a23fab7c0dbefb786e06106f2d108a9d96"}},
	{Version: "v0.1.2", Digests: []string{"c8afb962ae84ae2a0684111204f140284f0f7f4e3110111570998729fa13a121"}},
}
