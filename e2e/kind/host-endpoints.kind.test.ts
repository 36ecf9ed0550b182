/**
 * Host endpoints on the kind cluster (issue 29): automatic host endpoints on every node (the
 * controllers' `AUTO_HOST_ENDPOINTS=enabled`, as Calico's kube-controllers switch them on), and
 * a GlobalNetworkPolicy that admits only what the cluster needs into its nodes.
 *
 * - the cluster keeps working: every node stays Ready, every pod keeps running and restarts no
 *   container, every Tessera pod stays Ready, for a minute of kubelet heartbeats and probes,
 *   and `kubectl logs` reaches every node's kubelet — with a policy that admits neither the
 *   kubelet nor Tessera's ports: the failsafe ports keep them;
 * - a host port the policy admits answers from another node; one it does not admit is dropped;
 * - switching automatic host endpoints off removes them, and the dropped port answers again.
 *
 * The host ports are `socat` listeners in the node containers' host network (the node image
 * carries socat), probed from another node's host network: the control channel is
 * `podman exec`, never the cluster network. Needs Tessera installed (e2e/kind/deploy.sh);
 * installs it when the lifecycle test's uninstall has removed it.
 */
import { execFile } from 'node:child_process';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pollUntil } from '../controlplane/index.ts';
import { KindCluster } from '../runner/kind-cluster.ts';

type KindNode = KindCluster['nodes'][number];
import { KIND_KUBECONFIG, KIND_KUBECTL, kubectl, onNode, script } from './kind-tools.ts';

const log = (line: string): void => void process.stderr.write(`[kind host endpoints] ${line}\n`);

/** Admitted by the policy below. */
const OPEN_PORT = 18443;
/** Not admitted. */
const CLOSED_PORT = 18080;
const CREATED_BY = 'projectcalico.org/created-by';

/**
 * What the cluster needs into its nodes beyond the agent's failsafe ports: everything on the
 * loopback networks (a kubeadm control plane's static pods are probed on 127.0.0.1: etcd 2381,
 * controller manager 10257, scheduler 10259), ICMP and ICMPv6 (IPv6 neighbour discovery reaches
 * the host through its host endpoint), and the one open test port. The API server (6443), etcd,
 * the kubelet (10250) and Tessera's own health ports (9093–9095) are NOT admitted here: the
 * failsafes keep them, which is what this test proves. Replies to connections the node makes
 * are conntrack's. Ingress only: egress stays with the profile `projectcalico-default-allow` the
 * automatic host endpoints carry.
 */
const ADMIT_CLUSTER = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name: 'kind-host-admit' },
  spec: {
    order: 100,
    selector: `${CREATED_BY} == 'calico-kube-controllers'`,
    types: ['Ingress'],
    ingress: [
      { action: 'Allow', source: { nets: ['127.0.0.0/8'] } },
      { action: 'Allow', source: { nets: ['::1/128'] } },
      { action: 'Allow', protocol: 'ICMP' },
      { action: 'Allow', protocol: 'ICMPv6' },
      { action: 'Allow', protocol: 'TCP', destination: { ports: [OPEN_PORT] } },
    ],
  },
};

/** Where a test listener's pid is kept in the node container. */
const pidFile = (port: number): string => `/run/tessera-hep-test-${port}.pid`;
/** Shell that stops the test listener on `port`, if one runs. */
const stopListener = (port: number): string => `{ [ -f ${pidFile(port)} ] && kill $(cat ${pidFile(port)}) 2>/dev/null; rm -f ${pidFile(port)}; true; }`;

let cluster: KindCluster;
/** Container restarts per pod before the host endpoints: none may be added while they hold. */
let restartsBefore: Record<string, number>;
let from: KindNode;
let to: KindNode;

async function setAutoHostEndpoints(value: 'enabled' | 'disabled'): Promise<void> {
  await kubectl(['-n', 'tessera-system', 'set', 'env', 'deployment/tessera-controllers', `AUTO_HOST_ENDPOINTS=${value}`]);
  await kubectl(['-n', 'tessera-system', 'rollout', 'status', 'deployment/tessera-controllers', '--timeout=300s'], 320_000);
}

async function autoHeps(): Promise<string[]> {
  const out = await kubectl(['get', 'hostendpoints.projectcalico.org', '-l', CREATED_BY, '-o', 'jsonpath={.items[*].metadata.name}']);
  return out.split(/\s+/).filter(Boolean).sort();
}

/** Whether `port` on `to`'s IPv4 address answers a TCP connection from `from`'s host network. */
async function hostPortAnswers(port: number): Promise<boolean> {
  const target = to.ipv4 ?? '';
  const out = await onNode(from.name, ['bash', '-c', `timeout 3 socat -T2 - TCP:${target}:${port},connect-timeout=2 </dev/null >/dev/null 2>&1 && echo open || echo closed`]);
  return out.trim() === 'open';
}

/** Every pod's container restart count, by `<namespace>/<name>`. */
async function restarts(): Promise<Record<string, number>> {
  const pods = JSON.parse(await kubectl(['get', 'pods', '-A', '-o', 'json'])) as {
    items: { metadata: { namespace: string; name: string }; status: { containerStatuses?: { restartCount: number }[] } }[];
  };
  const out: Record<string, number> = {};
  for (const p of pods.items) out[`${p.metadata.namespace}/${p.metadata.name}`] = (p.status.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
  return out;
}

async function notReady(): Promise<string[]> {
  const bad: string[] = [];
  const nodes = JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])) as { items: { metadata: { name: string }; status: { conditions: { type: string; status: string }[] } }[] };
  for (const n of nodes.items) if (!n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True')) bad.push(`node ${n.metadata.name}`);
  const pods = JSON.parse(await kubectl(['get', 'pods', '-A', '-o', 'json'])) as {
    items: { metadata: { namespace: string; name: string; deletionTimestamp?: string }; status: { phase: string; conditions?: { type: string; status: string }[] } }[];
  };
  for (const p of pods.items) {
    if (p.metadata.deletionTimestamp !== undefined || p.status.phase === 'Succeeded') continue;
    const ready = p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    if (p.status.phase !== 'Running' || (p.metadata.namespace === 'tessera-system' && !ready)) bad.push(`pod ${p.metadata.namespace}/${p.metadata.name} (${p.status.phase}${ready ? '' : ', not Ready'})`);
  }
  return bad;
}

beforeAll(async () => {
  const installed = await kubectl(['-n', 'tessera-system', 'get', 'daemonset', 'tessera-agent', '--ignore-not-found', '-o', 'name']).catch(() => '');
  if (installed.trim() === '') await script('e2e/kind/deploy.sh', [], log);
  cluster = await KindCluster.connect({ log });
  [from, to] = cluster.nodes as [KindNode, KindNode];
  for (const port of [OPEN_PORT, CLOSED_PORT]) {
    await onNode(to.name, ['bash', '-c', `${stopListener(port)}; setsid socat TCP-LISTEN:${port},fork,reuseaddr EXEC:/bin/true >/dev/null 2>&1 </dev/null & echo $! >${pidFile(port)}`]);
  }
  await pollUntil(async () => ((await hostPortAnswers(CLOSED_PORT)) && (await hostPortAnswers(OPEN_PORT)) ? true : undefined), {
    description: `host ports ${OPEN_PORT} and ${CLOSED_PORT} on ${to.name} answering before any host endpoint`,
    timeoutMs: 30_000,
    intervalMs: 500,
  });
  log(`probing ${to.name} (${to.ipv4}) from ${from.name}`);
});

afterAll(async () => {
  await kubectl(['delete', 'globalnetworkpolicies.projectcalico.org', ADMIT_CLUSTER.metadata.name, '--ignore-not-found']).catch(() => '');
  await setAutoHostEndpoints('disabled').catch((e: unknown) => log(`switching off: ${String(e)}`));
  if (to !== undefined) await onNode(to.name, ['bash', '-c', [OPEN_PORT, CLOSED_PORT].map(stopListener).join('; ')]).catch(() => '');
});

describe('Tessera on a kind cluster: automatic host endpoints', () => {
  it('auto host endpoints on every node plus a policy admitting what the cluster needs: the cluster keeps working, a port the policy does not admit is dropped', async () => {
    restartsBefore = await restarts();
    await kubectlApply(JSON.stringify(ADMIT_CLUSTER));
    await setAutoHostEndpoints('enabled');
    const want = cluster.nodes.map((n) => `${n.name}-auto-hep`).sort();
    await pollUntil(async () => (JSON.stringify(await autoHeps()) === JSON.stringify(want) ? true : undefined), { description: `auto host endpoints ${want.join(', ')}`, timeoutMs: 120_000, intervalMs: 1_000 });
    await pollUntil(async () => (!(await hostPortAnswers(CLOSED_PORT)) ? true : undefined), { description: `${to.name}:${CLOSED_PORT} dropped`, timeoutMs: 60_000, intervalMs: 1_000 });
    expect(await hostPortAnswers(OPEN_PORT)).toBe(true);
    // A minute of kubelet heartbeats, probes and controller traffic through the host endpoints.
    const t0 = Date.now();
    while (Date.now() - t0 < 60_000) {
      expect(await notReady()).toEqual([]);
      await new Promise((r) => setTimeout(r, 10_000));
    }
    expect(await notReady()).toEqual([]);
    expect(await hostPortAnswers(CLOSED_PORT)).toBe(false);
    expect(await hostPortAnswers(OPEN_PORT)).toBe(true);
    // The API server still reaches every kubelet (10250, a failsafe port): logs of each agent.
    for (const pod of (await kubectl(['-n', 'tessera-system', 'get', 'pods', '-l', 'app.kubernetes.io/name=tessera-agent', '-o', 'jsonpath={.items[*].metadata.name}'])).split(/\s+/).filter(Boolean)) {
      expect((await kubectl(['-n', 'tessera-system', 'logs', '--tail=1', pod])).length, `kubectl logs ${pod}`).toBeGreaterThan(0);
    }
    const after = await restarts();
    expect(Object.keys(after).filter((pod) => (after[pod] ?? 0) > (restartsBefore[pod] ?? 0)), 'pods that restarted a container').toEqual([]);
  });

  it('switching automatic host endpoints off removes them, and the dropped port answers again', async () => {
    await setAutoHostEndpoints('disabled');
    await pollUntil(async () => ((await autoHeps()).length === 0 ? true : undefined), { description: 'no automatic host endpoint left', timeoutMs: 120_000, intervalMs: 1_000 });
    await pollUntil(async () => ((await hostPortAnswers(CLOSED_PORT)) ? true : undefined), { description: `${to.name}:${CLOSED_PORT} answering again`, timeoutMs: 60_000, intervalMs: 1_000 });
    expect(await notReady()).toEqual([]);
  });
});

/** `kubectl apply -f -` of `manifest`. */
async function kubectlApply(manifest: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile(KIND_KUBECTL, ['--kubeconfig', KIND_KUBECONFIG, 'apply', '-f', '-'], (err) => (err === null ? resolve() : reject(err)));
    child.stdin?.end(manifest);
  });
}
