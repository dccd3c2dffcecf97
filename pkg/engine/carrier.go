package engine

import "strings"

// Step is one asset's decision and what came of it this pass (or, in a
// preview, what would).
type Step struct {
	Decision *Decision
	Result   Result
}

// CarrierWaits says why a tombstone carried by assets (comma separated)
// waits for them: one of them writes, and its write has not landed (or,
// in a preview, would not go) this pass; or one cannot be judged now and
// may carry it once it can. The gate holds the deletion on it
// (gate.Write.Waits); the controller and render --output diff ask it of
// the same steps.
//
// only (a carried-only tombstone): while no carrier is active the object
// is kept, since it still does its job.
func CarrierWaits(assets string, only bool, steps map[string]Step) (string, bool) {
	var undecided []string
	for _, name := range strings.Split(assets, ",") {
		name = strings.TrimSpace(name)
		s, ok := steps[name]
		if !ok {
			undecided = append(undecided, "asset "+name+" was not evaluated")
			continue
		}
		switch s.Decision.Verdict {
		case VerdictIncluded:
			if s.Result.Outcome == Applied || s.Result.Outcome == Unchanged {
				return "", false // written with it, or in place already
			}
			return "its settings are in asset " + name + "'s object now, and that write is " + string(s.Result.Outcome) + " (" + s.Result.Reason + "): deleted with it, so the pool rolls once", true
		case VerdictInactive, VerdictExcluded, VerdictUnmanaged:
			// Nothing will carry them through this asset.
		default:
			undecided = append(undecided, "asset "+name+" is "+string(s.Decision.Verdict)+" ("+s.Decision.Reason+")")
		}
	}
	if len(undecided) > 0 {
		return "its settings move to another asset's object, which cannot be judged now (" + strings.Join(undecided, "; ") + "): kept until it can", true
	}
	if only {
		return "no asset that does its job is active (" + assets + "): kept, it still does it", true
	}
	return "", false
}
