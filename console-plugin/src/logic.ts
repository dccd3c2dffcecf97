// Pure helpers of the views and actions: no React, no console API, so the
// unit tests (test/logic.test.ts) run them under Node alone.
import type { Change, Rollout } from './types';

export const ANNOTATION = {
  autopilot: 'platform.kubevirt.io/autopilot',
  window: 'platform.kubevirt.io/disruption-window',
};

// annotationPatch is the JSON merge patch (RFC 7396) that sets key to
// value, or removes it when value is null: it touches no other annotation
// and needs no knowledge of the object's current ones (a map absent is
// created).
export const annotationPatch = (key: string, value: string | null) => ({
  metadata: { annotations: { [key]: value } },
});

// Why a write waits, by the gate's check that holds it (gate.Order), in
// an admin's words.
const checkWords: Record<string, string> = {
  window: 'disruption window closed',
  pools: 'pool busy',
  settle: 'facts settling',
  'fact budget': 'rollout budget spent',
  'write budget': 'write budget spent',
  dependency: 'waiting for a dependency',
  input: 'HCO annotation not understood',
  backoff: 'backing off after a failure',
  'report-only': 'report-only',
  'beside the shipped autopilot': 'the shipped autopilot acts',
};

// waitWhy names why a rollout waits: the gate's check, else its outcome.
export const waitWhy = (r: Rollout): string => {
  if (r.heldBy && checkWords[r.heldBy]) {
    return checkWords[r.heldBy];
  }
  return r.heldBy || r.outcome || 'waiting';
};

// relative says how far t is from now, in the largest two units: "in 2d 3h",
// "5m ago".
export const relative = (t: string | Date, now: Date): string => {
  const ms = new Date(t).getTime() - now.getTime();
  const abs = Math.abs(ms);
  const units: [string, number][] = [
    ['d', 86400000],
    ['h', 3600000],
    ['m', 60000],
    ['s', 1000],
  ];
  const parts: string[] = [];
  let rest = abs;
  for (const [u, size] of units) {
    if (parts.length === 2) break;
    const n = Math.floor(rest / size);
    if (n > 0 || (parts.length === 0 && u === 's')) {
      parts.push(`${n}${u}`);
      rest -= n * size;
    } else if (parts.length > 0) {
      break;
    }
  }
  const span = parts.join(' ');
  return ms >= 0 ? `in ${span}` : `${span} ago`;
};

// isZeroTime: Go's zero time, which the API writes for "none".
export const isZeroTime = (t: string | undefined): boolean => !t || t.startsWith('0001-01-01');

// refusal turns a failed request (the SDK's HttpError: code, message,
// the Status body as json) into what to show: the API server's own
// message, and for 403 a plain sentence about the user's rights.
export const refusal = (err: unknown): string => {
  const e = (err ?? {}) as { message?: string; code?: number; json?: { message?: string; code?: number } };
  const msg = e.json?.message || e.message || String(err);
  const code = e.code ?? e.json?.code;
  if (code === 403) {
    return `The API server refused your change: your user may not do this (${msg})`;
  }
  return `The API server refused your change: ${msg}`;
};

type Color = 'green' | 'orange' | 'red' | 'blue' | 'purple' | 'grey' | 'teal' | 'yellow';

// outcomeColor: green as rendered, blue waiting on the admin's terms,
// orange waiting on the cluster, red needs a person.
export const outcomeColor = (o: string): Color => {
  switch (o) {
    case 'Converged':
    case 'Applied':
    case 'Unchanged':
    case 'Deleted':
    case 'Included':
      return 'green';
    case 'Staged':
    case 'Paused':
    case 'ReportOnly':
      return 'blue';
    case 'Settling':
    case 'Deferred':
    case 'MissingDependency':
    case 'Drifted':
      return 'orange';
    case 'Conflict':
    case 'Refused':
    case 'Failed':
    case 'Invalid':
    case 'Throttled':
      return 'red';
  }
  return 'grey';
};

export const stateColor = (s: string): Color => {
  switch (s) {
    case 'active':
      return 'green';
    case 'waiting':
      return 'blue';
    case 'degraded':
      return 'red';
    case 'drifted':
      return 'orange';
  }
  return 'grey';
};

// changeSummary says in one line what a preview's changes do to nodes.
export const changeSummary = (changes: Change[]): string => {
  if (changes.length === 0) {
    return 'Nothing would be written or deleted.';
  }
  const pools = new Set<string>();
  let reboots = 0;
  for (const c of changes) {
    if (c.disruption.reboot) {
      reboots++;
      (c.disruption.pools?.length ? c.disruption.pools : c.disruption.pool ? [c.disruption.pool] : []).forEach((p) => pools.add(p));
    }
  }
  const objects = `${changes.length} object${changes.length === 1 ? '' : 's'} would be written or deleted`;
  if (reboots === 0) {
    return `${objects}; no node reboots.`;
  }
  return `${objects}; ${reboots} of them reboot${reboots === 1 ? 's' : ''} pool${pools.size === 1 ? '' : 's'} ${[...pools].sort().join(', ')}.`;
};
