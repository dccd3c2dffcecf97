import { useEffect, useState } from 'react';
import { Alert, Content, Label, List, ListItem, Spinner } from '@patternfly/react-core';
import { fetchPreview } from '../api';
import { changeSummary, waitWhy } from '../logic';
import type { Preview } from '../types';

// SwitchPreview shows, before a person sets an annotation, what the
// autopilot would then write and delete, what reboots and when, and what
// each pool's drain does to its VMs: the controller's planner and judge,
// asked through the API.
const SwitchPreview = ({ annotation, value }: { annotation: string; value: string | null }) => {
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
  return (
    <div data-test="preview">
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
          Pool <strong>{pool.name}</strong>: {pool.nodes} node{pool.nodes === 1 ? '' : 's'} drained in turn; {pool.impact}
        </Content>
      ))}
    </div>
  );
};

export default SwitchPreview;
