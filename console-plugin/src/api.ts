// The plugin's two ways out: the autopilot's read-only API through the
// console's proxy (the user's token), and patches of the HyperConverged
// through the console's Kubernetes API, with the user's own rights.
import { consoleFetchJSON } from '@openshift-console/dynamic-plugin-sdk';
import { annotationPatch } from './logic';
import type { Overview, Preview } from './types';

// The ConsolePlugin's name and proxy alias (pkg/consoleapi).
const API = '/api/proxy/plugin/virt-platform-autopilot/autopilot/api/v1';
export const OVERVIEW_URL = `${API}/overview`;

export const fetchOverview = (): Promise<Overview> => consoleFetchJSON(OVERVIEW_URL) as Promise<Overview>;

// fetchPreview asks what setting key to value (null: removing it) would
// make the autopilot do: the controller's own planner and judge.
export const fetchPreview = (key: string, value: string | null): Promise<Preview> => {
  const q = new URLSearchParams({ annotation: key });
  if (value !== null) {
    q.set('value', value);
  }
  return consoleFetchJSON(`${API}/preview?${q.toString()}`) as Promise<Preview>;
};

// setAnnotation sets (or, with null, removes) one annotation of the HCO
// the overview names, as the user: a JSON merge patch through the
// console's Kubernetes API proxy.
export const setAnnotation = async (o: Overview, key: string, value: string | null): Promise<void> => {
  const url = `/api/kubernetes/apis/hco.kubevirt.io/v1/namespaces/${encodeURIComponent(o.hco.namespace)}/hyperconvergeds/${encodeURIComponent(o.hco.name)}`;
  await consoleFetchJSON(url, 'PATCH', {
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: JSON.stringify(annotationPatch(key, value)),
  });
};
