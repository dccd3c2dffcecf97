import { Fragment, useState } from 'react';
import { Card, CardBody, CardTitle, Label, Switch, Title } from '@patternfly/react-core';
import { ExpandableRowContent, Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { outcomeColor, stateColor } from '../logic';
import type { Feature, Overview } from '../types';
import type { Ask } from './AutopilotView';

// FeaturesPanel: each feature's switch and state, and per object its
// outcome, the other writer it fights, and what a person customized.
const FeaturesPanel = ({ overview, ask }: { overview: Overview; ask: Ask }) => {
  const [expanded, setExpanded] = useState<Record<string, boolean>>({});
  return (
    <Card data-test="features">
      <CardTitle>
        <Title headingLevel="h2">Features</Title>
      </CardTitle>
      <CardBody>
        <Table aria-label="Features" variant="compact">
          <Thead>
            <Tr>
              <Th screenReaderText="Details" />
              <Th>Feature</Th>
              <Th>Switch</Th>
              <Th>State</Th>
              <Th>Objects</Th>
            </Tr>
          </Thead>
          {overview.features.map((f, i) => {
            const open = !!expanded[f.name];
            const assets = f.assets ?? [];
            return (
              <Tbody key={f.name} isExpanded={open} data-test={`feature-${f.name}`}>
                <Tr>
                  <Td expand={{ rowIndex: i, isExpanded: open, onToggle: () => setExpanded({ ...expanded, [f.name]: !open }) }} />
                  <Td dataLabel="Feature">
                    <strong>{f.name}</strong> <Label isCompact>{f.maturity}</Label>
                    <div>{f.description}</div>
                  </Td>
                  <Td dataLabel="Switch">
                    {f.switch ? (
                      <Switch
                        id={`switch-${f.name}`}
                        aria-label={`Turn ${f.name} ${f.switchOn ? 'off' : 'on'}`}
                        isChecked={f.switchOn}
                        onChange={(_e, on) =>
                          ask({
                            key: f.switch!,
                            value: on ? 'true' : null,
                            title: `Turn ${f.name} ${on ? 'on' : 'off'}?`,
                            confirm: `Turn ${on ? 'on' : 'off'}`,
                            done: `${f.name} turned ${on ? 'on' : 'off'}`,
                          })
                        }
                      />
                    ) : (
                      'always on'
                    )}
                  </Td>
                  <Td dataLabel="State">
                    <Label color={stateColor(f.state)} data-test="state">
                      {f.state}
                    </Label>
                    {f.reason && <div>{f.reason}</div>}
                  </Td>
                  <Td dataLabel="Objects">
                    {assets.map((a) => (
                      <Label key={a.name} isCompact color={outcomeColor(a.outcome)}>
                        {a.outcome}
                      </Label>
                    ))}
                  </Td>
                </Tr>
                <Tr isExpanded={open}>
                  <Td colSpan={5}>
                    <ExpandableRowContent>
                      <Objects f={f} />
                    </ExpandableRowContent>
                  </Td>
                </Tr>
              </Tbody>
            );
          })}
        </Table>
      </CardBody>
    </Card>
  );
};

const Objects = ({ f }: { f: Feature }) => {
  const extra = Object.fromEntries(f.objects.map((o) => [o.name, o]));
  return (
    <Table aria-label={`Objects of ${f.name}`} variant="compact" borders={false}>
      <Thead>
        <Tr>
          <Th>Object</Th>
          <Th>Outcome</Th>
          <Th>Disruption</Th>
          <Th>Why</Th>
        </Tr>
      </Thead>
      <Tbody>
        {(f.assets ?? []).map((a) => {
          const x = extra[a.name];
          return (
            <Tr key={a.name} data-test={`object-${a.name}`}>
              <Td dataLabel="Object">{a.object || a.name}</Td>
              <Td dataLabel="Outcome">
                <Label color={outcomeColor(a.outcome)}>{a.outcome}</Label>
              </Td>
              <Td dataLabel="Disruption">{a.disruption}</Td>
              <Td dataLabel="Why">
                {a.reason}
                {x?.opponents && x.opponents.length > 0 && (
                  <div data-test="opponents">
                    Fights with: <strong>{x.opponents.join(', ')}</strong>
                  </div>
                )}
                {(a.deferred ?? []).length > 0 && (
                  <div data-test="deferred">
                    Left to their owners:{' '}
                    {(a.deferred ?? []).map((d, i) => (
                      <Fragment key={i}>
                        {i > 0 && ', '}
                        <code>{d.field}</code> ({d.managers.join(', ')})
                      </Fragment>
                    ))}
                  </div>
                )}
                {x?.customizations && x.customizations.length > 0 && (
                  <div data-test="customizations">
                    Customized by a person:{' '}
                    {x.customizations.map((c) => (
                      <Label key={c} isCompact color="purple">
                        {c}
                      </Label>
                    ))}
                  </div>
                )}
              </Td>
            </Tr>
          );
        })}
      </Tbody>
    </Table>
  );
};

export default FeaturesPanel;
