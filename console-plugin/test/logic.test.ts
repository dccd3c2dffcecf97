// The plugin's pure helpers, judged against what they must produce: JSON
// patches the API server applies as RFC 6902 says, times as a person reads
// them, the SDK's HttpError as the user must see it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { annotationPatch, changeSummary, escapePointer, refusal, relative, waitWhy } from '../src/logic';

// apply is RFC 6902's add and remove on an object's annotations, written
// from the RFC (sections 4.1 and 4.2), to check what annotationPatch
// produces does what it says.
const apply = (obj: { metadata: { annotations?: Record<string, string> } }, ops: ReturnType<typeof annotationPatch>) => {
  const out = JSON.parse(JSON.stringify(obj));
  for (const op of ops) {
    const tokens = op.path.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop()!;
    let parent = out;
    for (const t of tokens) {
      if (!(t in parent)) throw new Error(`path ${op.path}: ${t} does not exist`);
      parent = parent[t];
    }
    if (op.op === 'add') parent[last] = op.value;
    else if (op.op === 'remove') {
      if (!(last in parent)) throw new Error(`remove ${op.path}: absent`);
      delete parent[last];
    }
  }
  return out;
};

test('annotationPatch sets and removes every key over generated objects', () => {
  const keys = ['platform.kubevirt.io/autopilot', 'platform.kubevirt.io/enable-x', 'a~b/c', 'plain'];
  const currents: (Record<string, string> | undefined)[] = [undefined, {}, { other: '1' }];
  for (const k of keys) {
    currents.push({ [k]: 'old' }, { [k]: 'old', other: 'kept' });
  }
  for (const cur of currents) {
    for (const key of keys) {
      for (const value of ['true', 'false', '', 'Sat 02:00-04:00 UTC', null]) {
        const obj = { metadata: cur === undefined ? {} : { annotations: { ...cur } } };
        const ops = annotationPatch(cur, key, value);
        const got = apply(obj, ops).metadata.annotations ?? {};
        const want = { ...(cur ?? {}) };
        if (value === null) delete want[key];
        else want[key] = value;
        assert.deepEqual(got, want, `${JSON.stringify(cur)} ${key}=${value}`);
        if ((value === null && !(cur && key in cur)) || (value !== null && cur?.[key] === value)) {
          assert.equal(ops.length, 0, 'nothing to do sends nothing');
        }
      }
    }
  }
});

test('escapePointer escapes ~ before /', () => {
  assert.equal(escapePointer('a/b~c'), 'a~1b~0c');
  assert.equal(escapePointer('~1'), '~01');
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
