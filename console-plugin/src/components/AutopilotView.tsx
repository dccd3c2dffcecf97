import { useCallback, useEffect, useState } from 'react';
import {
  Alert,
  AlertActionCloseButton,
  Button,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Spinner,
  Stack,
  StackItem,
} from '@patternfly/react-core';
import { fetchOverview, setAnnotation } from '../api';
import { refusal } from '../logic';
import type { Overview } from '../types';
import StatePanel from './StatePanel';
import PoolsPanel from './PoolsPanel';
import FeaturesPanel from './FeaturesPanel';
import SwitchPreview from './SwitchPreview';

// How often the view is read again while shown.
const REFRESH_MS = 10000;

// Ask opens the confirmation of one annotation's change, with its
// preview: every action goes through it.
export type Ask = (a: Asked) => void;

export type Asked = {
  // The annotation and its new value (null: removed).
  key: string;
  value: string | null;
  // title asks the question; confirm labels the button; done is said once
  // the API server took the change.
  title: string;
  confirm: string;
  done: string;
};

// AutopilotView reads the overview, shows it, and patches the HCO as the
// user for each action; the API server's refusal is shown as it says it.
const AutopilotView = () => {
  const [overview, setOverview] = useState<Overview>();
  const [loadError, setLoadError] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [asked, setAsked] = useState<Asked>();

  const load = useCallback(() => {
    fetchOverview()
      .then((o) => {
        setOverview(o);
        setLoadError(undefined);
      })
      .catch((e) => setLoadError((e as Error).message || String(e)));
  }, []);

  useEffect(() => {
    load();
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, [load]);

  const act = async (a: Asked) => {
    if (!overview) return;
    setActionError(undefined);
    setDone(undefined);
    try {
      await setAnnotation(overview, a.key, a.value);
      setDone(a.done);
      load();
    } catch (e) {
      setActionError(refusal(e));
    }
  };

  if (loadError && !overview) {
    return (
      <Alert variant="danger" isInline title="The autopilot's view cannot be read">
        {loadError}
      </Alert>
    );
  }
  if (!overview) {
    return <Spinner aria-label="Reading the autopilot's view" />;
  }
  return (
    <Stack hasGutter>
      {actionError && (
        <StackItem>
          <Alert
            variant="danger"
            isInline
            title="Not changed"
            data-test="action-error"
            actionClose={<AlertActionCloseButton onClose={() => setActionError(undefined)} />}
          >
            {actionError}
          </Alert>
        </StackItem>
      )}
      {done && (
        <StackItem>
          <Alert variant="success" isInline title={done} data-test="action-done" />
        </StackItem>
      )}
      {overview.standby && (
        <StackItem>
          <Alert variant="info" isInline title="This replica has not reconciled yet">
            It waits for the leader lease or has just started: what the autopilot last did fills in when it reconciles.
          </Alert>
        </StackItem>
      )}
      {loadError && (
        <StackItem>
          <Alert variant="warning" isInline title="Showing the last view read">
            {loadError}
          </Alert>
        </StackItem>
      )}
      <StackItem>
        <StatePanel overview={overview} ask={setAsked} />
      </StackItem>
      <StackItem>
        <PoolsPanel overview={overview} />
      </StackItem>
      <StackItem>
        <FeaturesPanel overview={overview} ask={setAsked} />
      </StackItem>
      {asked && (
        <Modal isOpen variant="medium" onClose={() => setAsked(undefined)} aria-labelledby="ask-title">
          <ModalHeader title={asked.title} labelId="ask-title" />
          <ModalBody>
            <SwitchPreview annotation={asked.key} value={asked.value} current={overview} />
          </ModalBody>
          <ModalFooter>
            <Button
              variant="primary"
              onClick={() => {
                const a = asked;
                setAsked(undefined);
                act(a);
              }}
            >
              {asked.confirm}
            </Button>
            <Button variant="link" onClick={() => setAsked(undefined)}>
              Cancel
            </Button>
          </ModalFooter>
        </Modal>
      )}
    </Stack>
  );
};

export default AutopilotView;
