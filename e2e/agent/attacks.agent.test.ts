/**
 * The attack suite: what a hostile or careless cluster user can write, tried against the real
 * API server (manifests/ applied: CRDs, RBAC, admission), `tessera controllers` and a
 * `tessera agent` on a netns node, with real TCP probes. Each case is a regression test.
 *
 * New (issue 19; fail on the code before it):
 * - a WorkloadEndpoint claiming pod b's host interface, in a namespace that sorts first, with an
 *   allow-all profile: refused by admission for an ordinary user; written by an identity
 *   admission allows, the agent fails closed — b's traffic drops instead of being allowed — and
 *   b's own policy is back once the claimant is deleted;
 * - a WorkloadEndpoint claiming pod b's address with labels a policy trusts: refused for an
 *   ordinary user; written by an allowed identity on b's node, b does not gain the trust (its
 *   traffic drops while the conflict lasts).
 * Already handled safely (kept so they stay so): invalid selectors, oversized policies,
 * metacharacters in names and selectors, and the agent ServiceAccount's RBAC (read-only).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { ApiException, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { locateBinaries } from '../controlplane/binaries.ts';
import { pollUntil } from '../controlplane/poll-until.ts';
import { issueServiceAccountToken, type ServiceAccountIdentity } from '../controlplane/service-account-token.ts';
import { E2eCluster } from '../runner/cluster.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { ManifestObject, Probe, Scenario } from '../runner/scenario.ts';

const NS = 'shop';
/** Sorts before `shop`: the old code let the endpoint whose namespace/name sorts first win an interface. */
const EVIL_NS = 'evil';
const NODE = 'node-1';
const IP = { a: '10.68.1.10', b: '10.68.1.11', c: '10.68.1.12' };
const PORTS = [{ name: 'http', containerPort: 80, protocol: 'TCP' as const }];
const pod = (name: keyof typeof IP) => ({ namespace: NS, name, ip: IP[name], node: NODE, labels: { pod: name }, containerPorts: PORTS });
const REFUSED = /WorkloadEndpoints are written only by the Tessera controllers/;
/** Where the injected command would leave its mark, were it ever run by a shell. */
const PWNED = '/tmp/ak-pwned';

/** b denies all ingress (a Kubernetes NetworkPolicy, converted by the controllers). */
const DENY_B: ManifestObject = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-b', namespace: NS }, spec: { podSelector: { matchLabels: { pod: 'b' } }, policyTypes: ['Ingress'] } };
/** c accepts only endpoints labelled role=trusted. */
const C_TRUSTED_ONLY: ManifestObject = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: { name: 'c-trusted-only', namespace: NS },
  spec: { selector: "pod == 'c'", types: ['Ingress'], ingress: [{ action: 'Allow', source: { selector: "role == 'trusted'" } }] },
};
const SCENARIO: Scenario = {
  name: 'attacks',
  namespaces: [
    { name: NS, labels: { 'kubernetes.io/metadata.name': NS } },
    { name: EVIL_NS, labels: { 'kubernetes.io/metadata.name': EVIL_NS } },
  ],
  pods: [pod('a'), pod('b'), pod('c')],
  policies: [DENY_B, C_TRUSTED_ONLY],
  probes: [],
};

const p = (from: string, to: string, expected: boolean): Probe => ({ from: `${NS}/${from}`, to: `${NS}/${to}`, port: 80, protocol: 'TCP', expected });
/** The verdicts of the scenario's own policies. */
const BASELINE = [p('a', 'b', false), p('b', 'a', true), p('a', 'c', false), p('b', 'c', false)];

interface Outcome {
  readonly code: number;
  readonly message: string;
}
async function outcome(call: Promise<unknown>): Promise<Outcome> {
  return call.then(
    () => ({ code: 200, message: '' }),
    (err: unknown) => {
      if (err instanceof ApiException) return { code: err.code, message: String(err.body) };
      throw err;
    },
  );
}

let cluster: E2eCluster;
let run: ScenarioRun;
/** Admission lets it write endpoints (the controllers' own ServiceAccount). */
let allowed: ServiceAccountIdentity;
/** An ordinary user whose RBAC allows writing endpoints in both namespaces: admission alone refuses it. */
let intruder: ServiceAccountIdentity;
/** The agent's own token (manifests/11-rbac-agent.yaml). */
let agentId: ServiceAccountIdentity;

const wepApi = { group: 'projectcalico.org', version: 'v3', plural: 'workloadendpoints' } as const;
function attackerEndpoint(namespace: string, name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): Record<string, unknown> {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'WorkloadEndpoint',
    metadata: { name, namespace, labels },
    spec: { orchestrator: 'k8s', node: NODE, pod: name, endpoint: 'eth0', profiles: [`kns.${namespace}`], ...spec },
  };
}
const createEndpoint = (kc: KubeConfig, body: Record<string, unknown>): Promise<Outcome> =>
  outcome(kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...wepApi, namespace: (body.metadata as { namespace: string }).namespace, body }));
const deleteEndpoint = (kc: KubeConfig, namespace: string, name: string): Promise<Outcome> =>
  outcome(kc.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({ ...wepApi, namespace, name }));

/** Pod b's endpoint as the controllers wrote it. */
async function victimEndpoint(): Promise<{ interfaceName: string; ipNetworks: string[] }> {
  const got = (await cluster.admin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...wepApi, namespace: NS, name: await endpointNameOf('b') })) as {
    spec: { interfaceName: string; ipNetworks: string[] };
  };
  return got.spec;
}
async function endpointNameOf(podName: string): Promise<string> {
  const list = (await cluster.admin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...wepApi, namespace: NS })) as { items: Array<{ metadata: { name: string }; spec: { pod: string } }> };
  const found = list.items.find((w) => w.spec.pod === podName);
  if (found === undefined) throw new Error(`no WorkloadEndpoint for pod ${NS}/${podName}`);
  return found.metadata.name;
}

async function expectVerdicts(probes: readonly Probe[]): Promise<void> {
  const results = await run.converge(0, probes);
  expect(results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to}: expected ${r.probe.expected}, got ${r.got}`)).toEqual([]);
}

const agent = () => cluster.agents.get(NODE)!;
/** A labelled series of the agent's /metrics, e.g. `tessera_dataplane_conflicting_endpoints{kind="interface"}`. */
async function agentSeries(series: string): Promise<number | undefined> {
  const { body } = await agent().get('/metrics');
  const line = body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
const agentLog = (): Array<Record<string, unknown>> =>
  readFileSync(join(cluster.dir, `agent-${NODE}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const nodeRules = (): string => execFileSync('ip', ['netns', 'exec', cluster.network.nodeNs(NODE), 'iptables-nft-save', '-t', 'filter'], { encoding: 'utf8' });

/** Runs kubectl as `kubeconfigPath`; never throws. */
function kubectlAs(kubeconfigPath: string, args: readonly string[]): { code: number; stdout: string; stderr: string } {
  try {
    return { code: 0, stdout: execFileSync(locateBinaries().kubectl, ['--kubeconfig', kubeconfigPath, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }), stderr: '' };
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    return { code: err.status ?? 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
  }
}

beforeAll(async () => {
  cluster = await E2eCluster.start({ refreshSeconds: 5, log: () => undefined });
  run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
  await run.setUp();
  await run.applyStep({ policies: SCENARIO.policies ?? [], probes: [] });
  const server = cluster.admin.getCurrentCluster()!.server;
  const caData = cluster.admin.getCurrentCluster()!.caData;
  const identity = (namespace: string, serviceAccount: string, create: boolean) =>
    issueServiceAccountToken(cluster.admin, {
      namespace,
      serviceAccount,
      create,
      server,
      ...(caData === undefined ? {} : { caPem: Buffer.from(caData, 'base64').toString('utf8') }),
      kubeconfigPath: join(cluster.dir, `ak-${serviceAccount}.kubeconfig`),
    });
  allowed = await identity('tessera-system', 'tessera-controllers', false);
  agentId = await identity('tessera-system', 'tessera-agent', false);
  intruder = await identity(NS, 'ak-intruder', true);
  const rbac = cluster.admin.makeApiClient(RbacAuthorizationV1Api);
  for (const namespace of [NS, EVIL_NS]) {
    await rbac.createNamespacedRole({
      namespace,
      body: { metadata: { name: 'ak-wep-writer' }, rules: [{ apiGroups: ['projectcalico.org'], resources: ['workloadendpoints'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'ak-wep-writer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ak-wep-writer' },
        subjects: [{ kind: 'ServiceAccount', name: 'ak-intruder', namespace: NS }],
      },
    });
  }
  await expectVerdicts(BASELINE);
});

afterAll(async () => {
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('attack suite (real API server with manifests/ admission, controllers, a netns agent, real probes)', () => {
  it("a WorkloadEndpoint claiming pod b's interface: refused for an ordinary user; written by an allowed identity, b's traffic drops instead of being allowed, and b's policy is back once it is deleted", async () => {
    const { interfaceName } = await victimEndpoint();
    const claimant = attackerEndpoint(EVIL_NS, 'aaa-claimant', { interfaceName, ipNetworks: ['10.68.1.66/32'] });

    const refused = await createEndpoint(intruder.kubeConfig, claimant);
    expect(refused.code).toBe(403);
    expect(refused.message).toMatch(REFUSED);

    expect((await createEndpoint(allowed.kubeConfig, claimant)).code).toBe(200);
    try {
      // Fail closed: b neither receives (its Deny would have been replaced by an allow-all) nor
      // sends. b → a turning false shows the claim reached the kernel; a → b is probed again after.
      await expectVerdicts([p('b', 'a', false), p('a', 'b', false), p('a', 'c', false)]);
      expect(await run.probeOnce(p('a', 'b', false), 1_000)).toBe(false);
      expect(await agentSeries('tessera_dataplane_conflicting_endpoints{kind="interface"}')).toBe(2);
      const logged = agentLog().filter((l) => l['conflict'] === 'interface' && l['interface'] === interfaceName);
      expect(logged.length).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(logged[0]!['endpoints'])).toContain('aaa-claimant');
      expect(agent().running).toBe(true);
    } finally {
      expect((await deleteEndpoint(allowed.kubeConfig, EVIL_NS, 'aaa-claimant')).code).toBe(200);
    }
    await expectVerdicts(BASELINE);
    expect(await agentSeries('tessera_dataplane_conflicting_endpoints{kind="interface"}')).toBe(0);
  });

  it("a WorkloadEndpoint claiming pod b's address with labels c trusts: refused for an ordinary user; written by an allowed identity on b's node, b does not gain c's trust", async () => {
    const { ipNetworks } = await victimEndpoint();
    const thief = attackerEndpoint(NS, 'aaa-ip-thief', { interfaceName: 'caliakthief', ipNetworks }, { role: 'trusted' });

    const refused = await createEndpoint(intruder.kubeConfig, thief);
    expect(refused.code).toBe(403);
    expect(refused.message).toMatch(REFUSED);

    expect((await createEndpoint(allowed.kubeConfig, thief)).code).toBe(200);
    try {
      // b's address is now in c's "trusted" IP set; b's own interface drops instead.
      await expectVerdicts([p('b', 'a', false), p('b', 'c', false), p('a', 'c', false)]);
      expect(await run.probeOnce(p('b', 'c', false), 1_000)).toBe(false);
      expect(await agentSeries('tessera_dataplane_conflicting_endpoints{kind="address"}')).toBe(2);
    } finally {
      expect((await deleteEndpoint(allowed.kubeConfig, NS, 'aaa-ip-thief')).code).toBe(200);
    }
    await expectVerdicts(BASELINE);
  });

  it('an invalid selector fails closed in the agent (logged, counted): a GlobalNetworkPolicy whose selector cannot be read denies every endpoint in its directions, never opens one; the agent stays up', async () => {
    const before = (await agentSeries('tessera_calc_invalid_updates_total{kind="GlobalNetworkPolicy"}')) ?? 0;
    // Would open b to everyone, were the selector read as "pod == 'b'"; dropping it (Calico's
    // way) would leave the other policies as they were; failing closed, its Ingress denies all.
    const bad: ManifestObject = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'ak-bad-selector' },
      spec: { order: 1, selector: "pod == 'b' &&& (", types: ['Ingress'], ingress: [{ action: 'Allow' }] },
    };
    await run.upsert(bad);
    try {
      await pollUntil(async () => (((await agentSeries('tessera_calc_invalid_updates_total{kind="GlobalNetworkPolicy"}')) ?? 0) > before ? true : undefined), {
        description: 'the agent to see the invalid policy',
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      expect(await agentSeries('tessera_invalid_policies{kind="GlobalNetworkPolicy"}')).toBe(1);
      await expectVerdicts(BASELINE.map((probe) => ({ ...probe, expected: false })));
      expect(await agent().ready()).toBe(true);
    } finally {
      await run.remove({ apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', name: 'ak-bad-selector' });
    }
    await expectVerdicts(BASELINE);
  });

  it('oversized policies: the API server refuses a selector over the CRD limit; a rule iptables-restore rejects fails closed for its endpoint only', async () => {
    const huge = await outcome(
      cluster.admin.makeApiClient(CustomObjectsApi).createClusterCustomObject({
        group: 'projectcalico.org',
        version: 'v3',
        plural: 'globalnetworkpolicies',
        body: { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'ak-huge' }, spec: { selector: `pod in {${Array.from({ length: 2000 }, (_, i) => `'p${i}'`).join(',')}}` } },
      }),
    );
    expect(huge.code).toBe(422);

    // 50 negated named ports on one rule: over iptables-restore's 255-argument line limit.
    const rejected: ManifestObject = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'ak-rejected', namespace: NS },
      spec: { selector: "pod == 'a'", types: ['Ingress'], ingress: [{ action: 'Allow', protocol: 'TCP', destination: { notPorts: Array.from({ length: 50 }, (_, i) => `p${i}`) } }] },
    };
    await run.upsert(rejected);
    // a's ingress chain is a DROP (fail closed, though the rule says Allow); b's Deny and c's policy still hold.
    await expectVerdicts([p('b', 'a', false), p('a', 'b', false), p('a', 'c', false)]);
    expect(await agentSeries('tessera_dataplane_rejected_chains{ip_version="4",table="filter"}')).toBeGreaterThan(0);
    expect(agent().running).toBe(true);
    await run.remove({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', name: 'ak-rejected', namespace: NS });
    await expectVerdicts(BASELINE);
  });

  it('metacharacters in names and selectors never reach iptables-restore as text: names are refused by the API server, selector literals become IP set hashes', async () => {
    const badName = await outcome(
      cluster.admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        group: 'projectcalico.org',
        version: 'v3',
        plural: 'networkpolicies',
        namespace: NS,
        body: { apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', metadata: { name: `ak"\n$(touch ${PWNED})`, namespace: NS }, spec: { selector: 'all()' } },
      }),
    );
    expect(badName.code).toBe(422);

    const hostile = `" -j ACCEPT\nCOMMIT\n*filter\n-I FORWARD -j ACCEPT\n$(touch ${PWNED}) \`touch ${PWNED}\``;
    const meta: ManifestObject = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'ak-meta', namespace: NS, annotations: { note: hostile } },
      spec: {
        selector: "pod == 'a'",
        types: ['Ingress'],
        ingress: [{ action: 'Allow', metadata: { annotations: { note: hostile } }, source: { selector: `role == '${hostile.replace(/'/g, '')}'` } }],
      },
    };
    await run.upsert(meta);
    // a now accepts only a role no endpoint has: b → a is denied, and nothing was injected.
    await expectVerdicts([p('b', 'a', false), p('a', 'b', false)]);
    const rules = nodeRules();
    expect(rules).not.toContain('touch');
    expect(rules).not.toMatch(/^-A FORWARD -j ACCEPT$/m);
    expect(existsSync(PWNED)).toBe(false);
    await run.remove({ apiVersion: 'projectcalico.org/v3', kind: 'NetworkPolicy', name: 'ak-meta', namespace: NS });
    await expectVerdicts(BASELINE);
  });

  it("the agent's ServiceAccount can read what it watches and write nothing", async () => {
    const can = (verb: string, resource: string, namespaced = true) =>
      kubectlAs(agentId.kubeconfigPath, ['auth', 'can-i', verb, resource, ...(namespaced ? ['-n', NS] : [])]).stdout.trim();
    for (const r of ['networkpolicies.projectcalico.org', 'workloadendpoints.projectcalico.org']) expect(can('watch', r)).toBe('yes');
    for (const r of ['globalnetworkpolicies.projectcalico.org', 'tiers.projectcalico.org', 'profiles.projectcalico.org']) expect(can('list', r, false)).toBe('yes');
    const namespaced = ['networkpolicies.projectcalico.org', 'workloadendpoints.projectcalico.org', 'networkpolicies.networking.k8s.io', 'pods', 'serviceaccounts', 'secrets', 'configmaps', 'leases.coordination.k8s.io', 'roles.rbac.authorization.k8s.io', 'rolebindings.rbac.authorization.k8s.io'];
    const cluster_ = ['globalnetworkpolicies.projectcalico.org', 'tiers.projectcalico.org', 'profiles.projectcalico.org', 'namespaces', 'nodes', 'clusterroles.rbac.authorization.k8s.io', 'clusterrolebindings.rbac.authorization.k8s.io', 'validatingadmissionpolicies.admissionregistration.k8s.io', 'validatingadmissionpolicybindings.admissionregistration.k8s.io', 'customresourcedefinitions.apiextensions.k8s.io'];
    const granted: string[] = [];
    for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection', 'escalate', 'bind', 'impersonate']) {
      for (const r of namespaced) if (can(verb, r) !== 'no') granted.push(`${verb} ${r}`);
      for (const r of cluster_) if (can(verb, r, false) !== 'no') granted.push(`${verb} ${r}`);
    }
    expect(granted).toEqual([]);
    expect(can('get', 'secrets')).toBe('no');

    // And a real write with its token is refused by RBAC.
    const write = await outcome(
      agentId.kubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({
        group: 'projectcalico.org',
        version: 'v3',
        plural: 'globalnetworkpolicies',
        body: { apiVersion: 'projectcalico.org/v3', kind: 'GlobalNetworkPolicy', metadata: { name: 'ak-from-agent' }, spec: { selector: 'all()', ingress: [{ action: 'Allow' }] } },
      }),
    );
    expect(write.code).toBe(403);
  });
});
