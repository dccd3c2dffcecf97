// What the console gives a plugin through the shared module
// @openshift-console/dynamic-plugin-sdk, as far as this plugin uses it,
// backed by the console's own backend paths (/api/kubernetes, the plugin
// proxy) that the test host serves against a real API server with the
// logged-in user's token. Errors are the SDK's HttpError: code, message,
// the response body as json.
export class HttpError extends Error {
  code?: number;
  response?: Response;
  json?: { message?: string; code?: number };
  constructor(message: string, code?: number, response?: Response, json?: { message?: string; code?: number }) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.response = response;
    this.json = json;
  }
}

export const consoleFetch = async (url: string, options: RequestInit = {}): Promise<Response> => {
  const response = await fetch(url, { credentials: 'same-origin', ...options });
  if (!response.ok) {
    const text = await response.text();
    let json: { message?: string; code?: number } | undefined;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    throw new HttpError(json?.message || text.trim() || response.statusText, response.status, response, json);
  }
  return response;
};

export const consoleFetchJSON = async (url: string, method = 'GET', options: RequestInit = {}): Promise<unknown> => {
  const response = await consoleFetch(url, { ...options, method });
  return response.json();
};

type Model = { apiGroup?: string; apiVersion: string; plural: string; namespaced?: boolean };
type Resource = { metadata?: { name?: string; namespace?: string } };

const resourceURL = (model: Model, resource: Resource): string => {
  const base = model.apiGroup ? `/api/kubernetes/apis/${model.apiGroup}/${model.apiVersion}` : `/api/kubernetes/api/${model.apiVersion}`;
  const ns = model.namespaced && resource.metadata?.namespace ? `/namespaces/${encodeURIComponent(resource.metadata.namespace)}` : '';
  return `${base}${ns}/${model.plural}/${encodeURIComponent(resource.metadata?.name ?? '')}`;
};

export const k8sGet = ({ model, name, ns }: { model: Model; name: string; ns?: string }): Promise<unknown> =>
  consoleFetchJSON(resourceURL(model, { metadata: { name, namespace: ns } }));
