// What the autopilot's read-only API answers (pkg/consoleapi, Overview).

export type Outcome = string;

export type Notice = { annotation: string; reason: string; event: string; message: string };

export type Window = { value?: string; open: boolean; nextOpen: string; error?: string };

export type IdleStatus = { reason: string; message: string };

export type ShippedVerdict = { state: string; object?: string; release?: string; reason?: string };

export type Autopilot = {
  mode: 'managed' | 'paused' | 'report-only' | 'list';
  activation?: string;
  only?: string[];
  window: Window;
  idle?: IdleStatus;
  admissionPolicy?: string;
  admissionPolicyReason?: string;
  lastReconcile: string;
  lastError?: string;
  shippedAutopilot?: ShippedVerdict;
  disabledResources?: string;
  yieldTo?: string;
};

export type Rollout = {
  asset?: string;
  feature?: string;
  object?: string;
  outcome?: Outcome;
  reason?: string;
  heldBy?: string;
  reboot: boolean;
  actions?: string[];
  impact?: string;
  goes: string;
  since: string;
};

export type Pool = {
  name: string;
  nodes: number;
  nodesError?: string;
  waiting: Rollout[];
  rolled: Rollout[];
};

export type Deferral = { field: string; managers: string[]; owner?: string };

export type FeatureAssetStatus = {
  name: string;
  object?: string;
  outcome: Outcome;
  disruption: string;
  reason?: string;
  deferred?: Deferral[];
};

export type FeatureObject = {
  name: string;
  drift?: string[];
  opponents?: string[];
  customizations?: string[];
  since: string;
};

export type Feature = {
  name: string;
  description: string;
  maturity: string;
  switch?: string;
  state: string;
  reason?: string;
  assets: FeatureAssetStatus[] | null;
  switchValue?: string;
  switchOn: boolean;
  switchError?: string;
  objects: FeatureObject[];
};

export type Overview = {
  generated: string;
  hco: { namespace: string; name: string; resourceVersion?: string; annotations: Record<string, string> | null };
  autopilot: Autopilot;
  pools: Pool[];
  features: Feature[];
  notices: Notice[];
  standby?: boolean;
};

export type Disruption = { reboot: boolean; pool?: string; pools?: string[]; actions?: string[] };

export type Change = {
  asset: string;
  feature?: string;
  object: string;
  action: 'create' | 'update' | 'delete';
  disruption: Disruption;
  goes: boolean;
  heldBy?: string;
  outcome?: Outcome;
  reason?: string;
};

export type PoolImpact = { name: string; nodes: number; impact: string };

export type Preview = {
  annotation: string;
  value: string | null;
  changes: Change[];
  pools: PoolImpact[];
  notices: Notice[];
};
