/**
 * IPv6 enforced by the real `tessera agent` processes, on the runner's cluster: a real control
 * plane, `tessera controllers` writing the endpoints from the pods' `status.podIPs`, one agent
 * per node started WITHOUT `--ip-versions` (each detects its node's families), pods as network
 * namespaces with an IPv4 and an IPv6 address, and real TCP connections over both families.
 *
 * - node-1 and node-2 are dual-stack (a global IPv6 address): their agents program IPv4 and
 *   IPv6; node-3 is IPv4-only: its agent programs IPv4 and says, once, that a dual-stack pod's
 *   IPv6 traffic there is not filtered.
 * - Kubernetes NetworkPolicy: a pod selector admits the clients over IPv6 as over IPv4 (across
 *   nodes and on one node), an IPv6 `ipBlock` admits a pod over IPv6 only, and any other pod
 *   is denied in both families.
 * - Calico GlobalNetworkPolicy with an IPv6 CIDR: the clients' egress to web's IPv6 range is
 *   denied while IPv4 to the same pod stays allowed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pollUntil } from '../controlplane/poll-until.ts';
import { E2eCluster } from '../runner/cluster.ts';
import { ScenarioRun } from '../runner/run-scenario.ts';
import type { ManifestObject, Probe, Scenario, ScenarioPod } from '../runner/scenario.ts';

const PORTS = [{ name: 'http', containerPort: 80, protocol: 'TCP' as const }];
const pod = (namespace: string, name: string, node: string, ip: string, ip6: string, app: string): ScenarioPod => ({
  namespace,
  name,
  node,
  ip,
  ip6,
  labels: { app },
  containerPorts: PORTS,
});
const ns = (name: string) => ({ name, labels: { 'kubernetes.io/metadata.name': name } });

const WEB = pod('ds-web', 'web', 'node-1', '10.68.1.10', 'fd00:68::1:10', 'web');
/** Stranger's IPv6 address is admitted by an ipBlock; its IPv4 address is not. */
const STRANGER_V6 = 'fd00:68::2:12';
const SCENARIO: Scenario = {
  name: 'dual-stack',
  namespaces: [ns('ds-web'), ns('ds-client'), ns('ds-legacy')],
  pods: [
    WEB,
    pod('ds-client', 'client', 'node-2', '10.68.2.10', 'fd00:68::2:10', 'client'),
    pod('ds-client', 'near', 'node-1', '10.68.2.11', 'fd00:68::2:11', 'client'),
    pod('ds-client', 'stranger', 'node-2', '10.68.2.12', STRANGER_V6, 'other'),
    // Dual-stack pod on the IPv4-only node.
    pod('ds-legacy', 'legacy', 'node-3', '10.68.3.10', 'fd00:68::3:10', 'legacy'),
  ],
  probes: [],
};
const DUAL_STACK_NODES = ['node-1', 'node-2'];

const knp = (name: string, namespace: string, spec: object): ManifestObject => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec });
/** web admits app=client pods of ds-client, and stranger's IPv6 address, on TCP 80. */
const WEB_INGRESS = knp('web-ingress', 'ds-web', {
  podSelector: { matchLabels: { app: 'web' } },
  policyTypes: ['Ingress'],
  ingress: [
    { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ds-client' } }, podSelector: { matchLabels: { app: 'client' } } }], ports: [{ protocol: 'TCP', port: 80 }] },
    { from: [{ ipBlock: { cidr: `${STRANGER_V6}/128` } }], ports: [{ protocol: 'TCP', port: 80 }] },
  ],
});
/** The clients may not reach web's IPv6 range over TCP; everything else is allowed. */
const CLIENT_EGRESS: ManifestObject = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'ds-client-egress' },
  spec: {
    selector: "app == 'client'",
    types: ['Egress'],
    egress: [{ action: 'Deny', protocol: 'TCP', destination: { nets: ['fd00:68::1:0/112'] } }, { action: 'Allow' }],
  },
};
const LEGACY_DENY_ALL = knp('deny-all', 'ds-legacy', { podSelector: {}, policyTypes: ['Ingress'] });

const probe = (from: string, to: string, ipVersion: 4 | 6, expected: boolean): Probe => ({ from, to, port: 80, protocol: 'TCP', ipVersion, expected });
const both = (from: string, to: string, v4: boolean, v6: boolean): Probe[] => [probe(from, to, 4, v4), probe(from, to, 6, v6)];

let cluster: E2eCluster;
let run: ScenarioRun;

async function expectConverged(step: number, probes: readonly Probe[]): Promise<void> {
  const results = await run.converge(step, probes);
  const wrong = results.filter((r) => r.got !== r.probe.expected).map((r) => `${r.probe.from} → ${r.probe.to} IPv${r.probe.ipVersion ?? 4}: expected ${r.probe.expected}, got ${r.got}`);
  expect(wrong).toEqual([]);
}

/** The agent of `node`'s JSON log lines. */
function agentLog(node: string): Array<Record<string, unknown>> {
  return readFileSync(join(cluster.dir, `agent-${node}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function unenforcedGauge(node: string, ipVersion: 4 | 6): Promise<number | undefined> {
  const { body } = await cluster.agents.get(node)!.get('/metrics');
  const m = new RegExp(`^tessera_agent_unenforced_endpoints\\{ip_version="${ipVersion}"\\} (\\S+)$`, 'm').exec(body);
  return m === null ? undefined : Number(m[1]);
}

beforeAll(async () => {
  cluster = await E2eCluster.start({ dualStackNodes: DUAL_STACK_NODES, log: () => undefined });
  run = new ScenarioRun(cluster, SCENARIO, { settleMs: 20_000 });
  await run.setUp();
});

afterAll(async () => {
  await run?.tearDown().catch(() => undefined);
  await cluster?.close();
});

describe('tessera agent on dual-stack nodes (real control plane, netns pods, TCP over IPv4 and IPv6)', () => {
  it("each agent programs the families of its node's addresses, detected at start", () => {
    const choice = (node: string) => agentLog(node).find((l) => typeof l['msg'] === 'string' && (l['msg'] as string).startsWith('programming IPv'));
    for (const node of DUAL_STACK_NODES) expect(choice(node)).toMatchObject({ ipVersions: [4, 6], source: 'detected', msg: 'programming IPv4 and IPv6' });
    expect(choice('node-3')).toMatchObject({ ipVersions: [4], source: 'detected', msg: 'programming IPv4' });
  });

  it("the controllers' endpoint carries both of the pod's addresses (status.podIPs)", async () => {
    const objects = cluster.admin.makeApiClient(CustomObjectsApi);
    const webNetworks = async (): Promise<string[] | undefined> => {
      const weps = (await objects.listNamespacedCustomObject({ group: 'projectcalico.org', version: 'v3', namespace: 'ds-web', plural: 'workloadendpoints' })) as {
        items: Array<{ spec: { pod: string; ipNetworks: string[] } }>;
      };
      return weps.items.find((w) => w.spec.pod === 'web')?.spec.ipNetworks;
    };
    // The controllers write it asynchronously (the runner sets the pod's status after creating it).
    const want = ['10.68.1.10/32', 'fd00:68::1:10/128'];
    await pollUntil(async () => (JSON.stringify(await webNetworks()) === JSON.stringify(want) ? true : undefined), {
      description: "the controllers' WorkloadEndpoint for ds-web/web with both addresses",
      timeoutMs: 30_000,
      intervalMs: 100,
    }).catch(() => undefined);
    expect(await webNetworks()).toEqual(want);
  });

  it('without policy, every pod reaches web over IPv4 and IPv6, across nodes and on one node', async () => {
    await expectConverged(0, [...both('ds-client/client', 'ds-web/web', true, true), ...both('ds-client/near', 'ds-web/web', true, true), ...both('ds-client/stranger', 'ds-web/web', true, true)]);
  });

  it('a Kubernetes NetworkPolicy denies and allows over IPv6: pod selectors in both families, an IPv6 ipBlock over IPv6 only', async () => {
    await run.applyStep({ policies: [WEB_INGRESS], probes: [] });
    await expectConverged(1, [
      ...both('ds-client/client', 'ds-web/web', true, true),
      ...both('ds-client/near', 'ds-web/web', true, true),
      ...both('ds-client/stranger', 'ds-web/web', false, true),
      // Neither a client nor in the ipBlock: denied in both families (at node-1's ingress).
      ...both('ds-legacy/legacy', 'ds-web/web', false, false),
      ...both('ds-web/web', 'ds-client/stranger', true, true),
    ]);
  });

  it("a Calico policy with an IPv6 CIDR denies the clients' IPv6 egress to web while IPv4 stays allowed", async () => {
    await run.applyStep({ policies: [CLIENT_EGRESS], probes: [] });
    await expectConverged(2, [
      ...both('ds-client/client', 'ds-web/web', true, false),
      ...both('ds-client/near', 'ds-web/web', true, false),
      ...both('ds-client/stranger', 'ds-web/web', false, true),
      // The deny names web's range only: the clients' other IPv6 traffic is allowed.
      ...both('ds-client/client', 'ds-client/stranger', true, true),
    ]);
  });

  it('on the IPv4-only node, a dual-stack pod is filtered over IPv4 only, and the agent says so once', async () => {
    await run.applyStep({ policies: [LEGACY_DENY_ALL], probes: [] });
    await expectConverged(3, both('ds-client/client', 'ds-legacy/legacy', false, true));
    // An update of the endpoint (a new label) is not a second warning.
    await run.applyStep({ podLabels: [{ namespace: 'ds-legacy', name: 'legacy', labels: { app: 'legacy', rev: '2' } }], probes: [] });
    await run.agentsIdle();
    await pollUntil(async () => ((await unenforcedGauge('node-3', 6)) === 1 ? true : undefined), { description: "node-3's unenforced IPv6 endpoint gauge to be 1", timeoutMs: 10_000 });
    const warnings = agentLog('node-3').filter((l) => l['component'] === 'unenforced-family-reporter');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', ipVersion: 6, programmed: [4], namespace: 'ds-legacy', addresses: ['fd00:68::3:10/128'] });
    expect(String(warnings[0]?.['msg'])).toMatch(/IPv6 traffic is NOT filtered \(start the agent with --ip-versions 4,6/);
    for (const node of DUAL_STACK_NODES) {
      expect(await unenforcedGauge(node, 6)).toBe(0);
      expect(agentLog(node).filter((l) => l['component'] === 'unenforced-family-reporter')).toEqual([]);
    }
  });
});
