// A host page giving the plugin what the OpenShift console gives it: the
// shared modules (React and the SDK, host/sdk.ts) in the module-federation
// share scope, the entry callback the plugin's entry script calls, and
// its extensions resolved from plugin-manifest.json. ?view=page renders the
// console.page/route component, ?view=tab the HyperConverged tab.
import * as React from 'react';
import { createRoot } from 'react-dom/client';
import * as sdk from './sdk';

type Container = {
  init: (scope: unknown) => Promise<void> | void;
  get: (module: string) => Promise<() => { default?: unknown; [k: string]: unknown }>;
};
type Extension = { type: string; properties: Record<string, unknown> };
type Manifest = { name: string; version: string; baseURL: string; loadScripts: string[]; extensions: Extension[] };

const provided = (version: string, module: unknown) => ({
  [version]: { get: () => Promise.resolve(() => module), from: 'console-host', eager: true, loaded: 1 },
});

const shareScope = {
  react: provided(React.version, React),
  '@openshift-console/dynamic-plugin-sdk': provided('4.22.0', sdk),
};

const containers: Record<string, Container> = {};
(window as unknown as Record<string, unknown>).__load_plugin_entry__ = (id: string, container: Container) => {
  containers[id] = container;
};

const loadScript = (src: string) =>
  new Promise<void>((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = () => resolve();
    s.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.appendChild(s);
  });

// resolve reads a codeRef ("Module" or "Module.export") from the container.
const resolve = async (c: Container, ref: string) => {
  const [module, name = 'default'] = ref.split('.');
  const factory = await c.get(module);
  return factory()[name] as React.ComponentType<Record<string, unknown>>;
};

const main = async () => {
  const root = createRoot(document.getElementById('plugin')!);
  const params = new URLSearchParams(window.location.search);
  const plugin = params.get('plugin') ?? 'virt-platform-autopilot';
  const base = `/api/plugins/${plugin}/`;
  const manifest = (await (await fetch(`${base}plugin-manifest.json`)).json()) as Manifest;
  for (const s of manifest.loadScripts) {
    await loadScript(`${base}${s}`);
  }
  const container = containers[manifest.name];
  if (!container) {
    throw new Error(`the plugin's entry script did not call __load_plugin_entry__ for ${manifest.name}`);
  }
  await container.init(shareScope);
  const view = params.get('view') ?? 'page';
  const type = view === 'tab' ? 'console.tab/horizontalNav' : 'console.page/route';
  const ext = manifest.extensions.find((e) => e.type === type);
  if (!ext) {
    throw new Error(`the plugin has no ${type} extension`);
  }
  const ref = (ext.properties.component as { $codeRef: string }).$codeRef;
  const Component = await resolve(container, ref);
  let props: Record<string, unknown> = {};
  if (view === 'tab') {
    const model = ext.properties.model as { group: string; version: string; kind: string };
    const obj = await sdk.k8sGet({
      model: { apiGroup: model.group, apiVersion: model.version, plural: 'hyperconvergeds', namespaced: true },
      name: params.get('name') ?? 'kubevirt-hyperconverged',
      ns: params.get('ns') ?? 'openshift-cnv',
    });
    props = { obj };
    document.getElementById('tab-name')!.textContent = (ext.properties.page as { name: string }).name;
  }
  root.render(React.createElement(Component, props));
  document.body.dataset.loaded = 'true';
};

main().catch((e: Error) => {
  document.getElementById('host-error')!.textContent = e.message;
  document.body.dataset.loaded = 'error';
});
