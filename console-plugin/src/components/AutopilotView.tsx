import { useCallback, useEffect, useState } from 'react';
import { Alert, AlertActionCloseButton, Spinner, Stack, StackItem } from '@patternfly/react-core';
import { fetchOverview, setAnnotation } from '../api';
import { refusal } from '../logic';
import type { Overview } from '../types';
import StatePanel from './StatePanel';
import PoolsPanel from './PoolsPanel';
import FeaturesPanel from './FeaturesPanel';

// How often the view is read again while shown.
const REFRESH_MS = 10000;

export type Act = (key: string, value: string | null, what: string) => Promise<boolean>;

// AutopilotView reads the overview, shows it, and patches the HCO as the
// user for each action; the API server's refusal is shown as it says it.
const AutopilotView = () => {
  const [overview, setOverview] = useState<Overview>();
  const [loadError, setLoadError] = useState<string>();
  const [actionError, setActionError] = useState<string>();
  const [done, setDone] = useState<string>();

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

  const act: Act = async (key, value, what) => {
    if (!overview) return false;
    setActionError(undefined);
    setDone(undefined);
    try {
      await setAnnotation(overview, key, value);
      setDone(what);
      load();
      return true;
    } catch (e) {
      setActionError(refusal(e));
      return false;
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
      {loadError && (
        <StackItem>
          <Alert variant="warning" isInline title="Showing the last view read">
            {loadError}
          </Alert>
        </StackItem>
      )}
      <StackItem>
        <StatePanel overview={overview} act={act} />
      </StackItem>
      <StackItem>
        <PoolsPanel overview={overview} />
      </StackItem>
      <StackItem>
        <FeaturesPanel overview={overview} act={act} />
      </StackItem>
    </Stack>
  );
};

export default AutopilotView;
