import { useEffect, useState } from 'react';
import { Alert, Content, Label, List, ListItem, Spinner } from '@patternfly/react-core';
import { fetchPreview } from '../api';
import { changeSummary, waitWhy } from '../logic';
import type { Overview, Preview } from '../types';

// SwitchPreview shows, before a person sets an annotation, what the
// autopilot would then write and delete, what reboots and when, what
// each pool's drain does to its VMs, and the HCO inputs it would report
// that it does not now (such as the HCO deploying WASP when a pause
// drops the value it reads): the controller's planner and judge, asked
// through the API.
const SwitchPreview = ({ annotation, value, current }: { annotation: string; value: string | null; current: Overview }) => {
  const [p, setP] = useState<Preview>();
  const [err, setErr] = useState<string>();
  useEffect(() => {
    fetchPreview(annotation, value)
      .then(setP)
      .catch((e) => setErr((e as Error).message || String(e)));
  }, [annotation, value]);
  if (err) {
    return (
      <Alert variant="warning" isInline title="No preview">
        {err}
      </Alert>
    );
  }
  if (!p) {
    return <Spinner size="md" aria-label="Asking the autopilot" />;
  }
  const known = new Set(current.notices.map((n) => `${n.annotation} ${n.reason} ${n.message}`));
  const notices = p.notices.filter((n) => !known.has(`${n.annotation} ${n.reason} ${n.message}`));
  return (
    <div data-test="preview">
      {notices.map((n) => (
        <Alert key={`${n.annotation} ${n.reason}`} variant="warning" isInline title={n.annotation} data-test="preview-notice">
          {n.message}
        </Alert>
      ))}
      <Content component="p" data-test="preview-summary">
        {changeSummary(p.changes)}
      </Content>
      <List>
        {p.changes.map((c) => (
          <ListItem key={`${c.action}-${c.object}`} data-test="preview-change">
            <Label isCompact color={c.action === 'delete' ? 'red' : 'blue'}>
              {c.action}
            </Label>{' '}
            <strong>{c.object}</strong>
            {c.disruption.reboot ? `: reboots pool ${(c.disruption.pools ?? [c.disruption.pool]).join(', ')}` : ''}
            {c.goes ? ' (goes at once)' : <span data-test="preview-held">{` (held: ${waitWhy({ ...c, reboot: c.disruption.reboot, goes: '', since: '' })}; ${c.reason ?? ''})`}</span>}
          </ListItem>
        ))}
      </List>
      {p.pools.map((pool) => (
        <Content component="p" key={pool.name} data-test="preview-pool">
          Pool <strong>{pool.name}</strong>: {pool.impact}
        </Content>
      ))}
    </div>
  );
};

export default SwitchPreview;
