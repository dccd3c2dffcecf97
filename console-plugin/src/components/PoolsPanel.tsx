import {
  Card,
  CardBody,
  CardHeader,
  CardTitle,
  Content,
  EmptyState,
  Gallery,
  Label,
  List,
  ListItem,
  Title,
} from '@patternfly/react-core';
import { isZeroTime, relative, waitWhy } from '../logic';
import type { Overview, Pool, Rollout } from '../types';

const heldColor: Record<string, 'blue' | 'orange' | 'purple' | 'red' | 'grey'> = {
  window: 'blue',
  pools: 'orange',
  settle: 'orange',
  'fact budget': 'purple',
  'write budget': 'purple',
  dependency: 'grey',
  input: 'red',
};

// PoolsPanel: per MachineConfigPool, what waits to roll it and why, when
// it goes, what draining it does to VMs, and the last rollouts sent.
const PoolsPanel = ({ overview }: { overview: Overview }) => {
  const now = new Date(overview.generated);
  return (
    <Card data-test="pools">
      <CardTitle>
        <Title headingLevel="h2">Machine config pools: what will reboot, and when</Title>
      </CardTitle>
      <CardBody>
        {overview.pools.length === 0 ? (
          <EmptyState titleText="No MachineConfigPool" headingLevel="h3">
            The cluster has no MachineConfigPool: nothing the autopilot writes reboots a node.
          </EmptyState>
        ) : (
          <Gallery hasGutter minWidths={{ default: '340px' }}>
            {overview.pools.map((p) => (
              <PoolCard key={p.name} pool={p} now={now} />
            ))}
          </Gallery>
        )}
      </CardBody>
    </Card>
  );
};

const PoolCard = ({ pool, now }: { pool: Pool; now: Date }) => {
  const reboots = pool.waiting.some((r) => r.reboot);
  return (
    <Card isCompact data-test={`pool-${pool.name}`}>
      <CardHeader>
        <CardTitle>
          <Title headingLevel="h3">
            {pool.name}{' '}
            {pool.waiting.length === 0 ? (
              <Label color="green">nothing waiting</Label>
            ) : (
              <Label color={reboots ? 'orange' : 'blue'}>
                {pool.waiting.length} waiting{reboots ? ': reboots' : ''}
              </Label>
            )}
          </Title>
        </CardTitle>
      </CardHeader>
      <CardBody>
        <Content component="p">
          {pool.nodesError ? `Its nodes cannot be told: ${pool.nodesError}` : `${pool.nodes} node${pool.nodes === 1 ? '' : 's'}`}
        </Content>
        {pool.waiting.length > 0 && (
          <List isPlain>
            {pool.waiting.map((r) => (
              <WaitingItem key={`${r.asset}-${r.object}`} r={r} now={now} />
            ))}
          </List>
        )}
        {pool.rolled.length > 0 && (
          <>
            <Title headingLevel="h4">Last rollouts</Title>
            <List isPlain>
              {pool.rolled.slice(0, 5).map((r, i) => (
                <ListItem key={i}>
                  {relative(r.since, now)}: {r.object} ({r.reason})
                </ListItem>
              ))}
            </List>
          </>
        )}
      </CardBody>
    </Card>
  );
};

const WaitingItem = ({ r, now }: { r: Rollout; now: Date }) => (
  <ListItem data-test="waiting">
    <Label color={heldColor[r.heldBy ?? ''] ?? 'grey'} data-test="held-by">
      {waitWhy(r)}
    </Label>{' '}
    <strong>{r.object || r.asset}</strong>
    {r.feature && ` (${r.feature})`}
    {!isZeroTime(r.goes) && <span data-test="goes">: goes {relative(r.goes, now)}</span>}
    <Content component="small">
      {r.reboot ? 'Drains and reboots each node in turn. ' : `No reboot: ${(r.actions ?? []).join(', ')}. `}
      {r.impact && <span data-test="impact">VMs: {r.impact}. </span>}
      {r.reason}
    </Content>
  </ListItem>
);

export default PoolsPanel;
