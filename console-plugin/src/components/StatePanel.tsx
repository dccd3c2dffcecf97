import { useState } from 'react';
import {
  Alert,
  Button,
  Card,
  CardBody,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  ExpandableSection,
  Flex,
  FlexItem,
  Label,
  List,
  ListItem,
  TextInput,
} from '@patternfly/react-core';
import { ANNOTATION, isZeroTime, relative } from '../logic';
import type { Overview } from '../types';
import type { Ask } from './AutopilotView';

const modeColor = { managed: 'green', paused: 'orange', 'report-only': 'blue', list: 'purple' } as const;

const modeText = {
  managed: 'Managed: every feature that is on is kept as rendered',
  paused: 'Paused: nothing is written or deleted',
  'report-only': 'Report only: everything is compared, nothing is written',
  list: 'Some assets only',
};

// StatePanel: the autopilot's mode, window, admission policy and health,
// with pause/resume and the window's setting.
const StatePanel = ({ overview, ask }: { overview: Overview; ask: Ask }) => {
  const a = overview.autopilot;
  const now = new Date(overview.generated);
  const [windowDraft, setWindowDraft] = useState(a.window.value ?? '');
  const paused = a.mode === 'paused';
  return (
    <Card data-test="autopilot-state">
      <CardTitle>Autopilot</CardTitle>
      <CardBody>
        {a.idle && (
          <Alert variant="warning" isInline title={`Idle: ${a.idle.reason}`} data-test="idle">
            {a.idle.message}
          </Alert>
        )}
        {a.shippedAutopilot && (a.shippedAutopilot.state === 'acting' || a.shippedAutopilot.state === 'unknown') && (
          <Alert variant="warning" isInline title={`The autopilot OpenShift Virtualization ships is ${a.shippedAutopilot.state}`} data-test="shipped">
            {a.shippedAutopilot.reason}
          </Alert>
        )}
        <DescriptionList isHorizontal>
          <DescriptionListGroup>
            <DescriptionListTerm>Mode</DescriptionListTerm>
            <DescriptionListDescription>
              <Flex>
                <FlexItem>
                  <Label color={modeColor[a.mode]} data-test="mode">
                    {a.mode}
                  </Label>{' '}
                  {modeText[a.mode]}
                  {a.only && a.only.length > 0 && `: ${a.only.join(', ')}`}
                </FlexItem>
                <FlexItem>
                  {paused || a.mode === 'report-only' ? (
                    <Button
                      variant="secondary"
                      onClick={() =>
                        ask({
                          key: ANNOTATION.autopilot,
                          value: null,
                          title: 'Resume the autopilot?',
                          confirm: 'Resume',
                          done: 'Resumed: the autopilot manages every feature that is on',
                        })
                      }
                    >
                      Resume
                    </Button>
                  ) : (
                    <Button
                      variant="secondary"
                      onClick={() =>
                        ask({
                          key: ANNOTATION.autopilot,
                          value: 'false',
                          title: 'Pause the autopilot?',
                          confirm: 'Pause',
                          done: 'Paused: nothing is written or deleted',
                        })
                      }
                    >
                      Pause
                    </Button>
                  )}
                </FlexItem>
              </Flex>
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Disruption window</DescriptionListTerm>
            <DescriptionListDescription data-test="window">
              <WindowState overview={overview} now={now} />
              <Flex>
                <FlexItem grow={{ default: 'grow' }}>
                  <TextInput
                    aria-label="Disruption window"
                    placeholder="Sat,Sun 02:00-06:00 Europe/Berlin"
                    value={windowDraft}
                    onChange={(_e, v) => setWindowDraft(v)}
                  />
                </FlexItem>
                <FlexItem>
                  <Button
                    variant="secondary"
                    isDisabled={windowDraft.trim() === '' || windowDraft.trim() === (a.window.value ?? '')}
                    onClick={() =>
                      ask({
                        key: ANNOTATION.window,
                        value: windowDraft.trim(),
                        title: `Set the disruption window to "${windowDraft.trim()}"?`,
                        confirm: 'Set window',
                        done: `Disruption window set to ${windowDraft.trim()}`,
                      })
                    }
                  >
                    Set window
                  </Button>
                </FlexItem>
                {a.window.value && (
                  <FlexItem>
                    <Button
                      variant="link"
                      onClick={() =>
                        ask({
                          key: ANNOTATION.window,
                          value: null,
                          title: 'Remove the disruption window?',
                          confirm: 'Remove window',
                          done: 'Disruption window removed: rollouts go at any time',
                        })
                      }
                    >
                      Remove
                    </Button>
                  </FlexItem>
                )}
              </Flex>
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Admission policy</DescriptionListTerm>
            <DescriptionListDescription>
              <Label color={a.admissionPolicy === 'Enforced' ? 'green' : 'orange'}>{a.admissionPolicy || 'unknown'}</Label>{' '}
              {a.admissionPolicyReason}
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Last reconcile</DescriptionListTerm>
            <DescriptionListDescription>
              {isZeroTime(a.lastReconcile) ? 'not yet' : relative(a.lastReconcile, now)}
              {a.lastError && (
                <Alert variant="danger" isInline isPlain title={a.lastError} />
              )}
            </DescriptionListDescription>
          </DescriptionListGroup>
          {(a.disabledResources || a.yieldTo) && (
            <DescriptionListGroup>
              <DescriptionListTerm>Customizations</DescriptionListTerm>
              <DescriptionListDescription>
                {a.disabledResources && <div>disabled-resources: {a.disabledResources}</div>}
                {a.yieldTo && <div>yield-to: {a.yieldTo}</div>}
              </DescriptionListDescription>
            </DescriptionListGroup>
          )}
        </DescriptionList>
        {overview.notices.length > 0 && (
          <ExpandableSection toggleText={`HCO inputs not acted on as written (${overview.notices.length})`} data-test="notices">
            <List>
              {overview.notices.map((n) => (
                <ListItem key={n.annotation + n.reason}>
                  <strong>{n.annotation}</strong>: {n.message}
                </ListItem>
              ))}
            </List>
          </ExpandableSection>
        )}
      </CardBody>
    </Card>
  );
};

const WindowState = ({ overview, now }: { overview: Overview; now: Date }) => {
  const w = overview.autopilot.window;
  if (w.error) {
    return (
      <Alert variant="danger" isInline isPlain title={`Not understood: nothing that reboots goes until it is fixed (${w.error})`} />
    );
  }
  if (!w.value) {
    return <div>None: rollouts that reboot a pool go at any time.</div>;
  }
  return (
    <div>
      <code>{w.value}</code>{' '}
      {w.open ? (
        <Label color="green" data-test="window-state">
          open
        </Label>
      ) : (
        <>
          <Label color="orange" data-test="window-state">
            closed
          </Label>{' '}
          opens {relative(w.nextOpen, now)} ({new Date(w.nextOpen).toUTCString()})
        </>
      )}
    </div>
  );
};

export default StatePanel;
