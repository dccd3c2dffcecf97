// The plugin's pure helpers, judged against what they must produce: JSON
// patches the API server applies as RFC 7396 says, times as a person reads
// them, the SDK's HttpError as the user must see it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { annotationPatch, changeSummary, refusal, relative, waitWhy } from '../src/logic';

// mergePatch is RFC 7396's MergePatch (section 2), written from the RFC,
// to check what annotationPatch produces does what it says.
const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    return patch;
  }
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
};

test('annotationPatch sets and removes one key, and keeps every other, over generated objects', () => {
  const keys = ['platform.kubevirt.io/autopilot', 'platform.kubevirt.io/enable-x', 'a~b/c', 'plain'];
  const currents: (Record<string, string> | undefined)[] = [undefined, {}, { other: '1' }];
  for (const k of keys) {
    currents.push({ [k]: 'old' }, { [k]: 'old', other: 'kept' });
  }
  for (const cur of currents) {
    for (const key of keys) {
      for (const value of ['true', 'false', '', 'Sat 02:00-04:00 UTC', null]) {
        const obj = { metadata: cur === undefined ? { name: 'h' } : { name: 'h', annotations: { ...cur } } };
        const got = mergePatch(obj, annotationPatch(key, value)) as { metadata: { name: string; annotations?: Record<string, string> } };
        const want = { ...(cur ?? {}) };
        if (value === null) delete want[key];
        else want[key] = value;
        assert.deepEqual(got.metadata.annotations ?? {}, want, `${JSON.stringify(cur)} ${key}=${value}`);
        assert.equal(got.metadata.name, 'h', 'nothing else of the object changes');
      }
    }
  }
});

test('relative reads the two largest units', () => {
  const now = new Date('2026-11-28T00:00:00Z');
  assert.equal(relative('2026-11-30T03:10:00Z', now), 'in 2d 3h');
  assert.equal(relative('2026-11-28T00:05:00Z', now), 'in 5m');
  assert.equal(relative('2026-11-27T23:59:30Z', now), '30s ago');
  assert.equal(relative(now, now), 'in 0s');
});

test('waitWhy names the gate check, else the outcome', () => {
  const base = { reboot: true, goes: '', since: '' };
  assert.equal(waitWhy({ ...base, heldBy: 'window', outcome: 'Staged' }), 'disruption window closed');
  assert.equal(waitWhy({ ...base, heldBy: 'pools', outcome: 'Settling' }), 'pool busy');
  assert.equal(waitWhy({ ...base, heldBy: 'something new', outcome: 'Settling' }), 'something new');
  assert.equal(waitWhy({ ...base, outcome: 'Conflict' }), 'Conflict');
});

test('refusal shows the API server message, and says a 403 is about rights', () => {
  const forbidden = Object.assign(new Error('x'), { code: 403, json: { message: 'hyperconvergeds "h" is forbidden: User "u" cannot patch', code: 403 } });
  assert.match(refusal(forbidden), /your user may not do this \(hyperconvergeds "h" is forbidden/);
  const invalid = Object.assign(new Error('x'), { code: 422, json: { message: 'invalid value', code: 422 } });
  assert.equal(refusal(invalid), 'The API server refused your change: invalid value');
  assert.equal(refusal(new Error('network down')), 'The API server refused your change: network down');
});

test('changeSummary counts reboots and names the pools once', () => {
  const c = (reboot: boolean, pools?: string[]) => ({
    asset: 'a', object: 'o', action: 'create' as const, disruption: { reboot, pools }, goes: true,
  });
  assert.equal(changeSummary([]), 'Nothing would be written or deleted.');
  assert.equal(changeSummary([c(false)]), '1 object would be written or deleted; no node reboots.');
  assert.equal(changeSummary([c(true, ['worker']), c(true, ['worker', 'infra']), c(false)]),
    '3 objects would be written or deleted; 2 of them reboot pools infra, worker.');
});
