/**
 * Tessera's side of the Felix differential, as a user runs it: manifests/ applied to the same
 * API server Felix reads (Tessera's projectcalico.org/v3 CRDs beside Calico's
 * crd.projectcalico.org/v1 ones, RBAC, admission), `tessera controllers` (Kubernetes
 * NetworkPolicies → `knp.default.*`, Namespaces and ServiceAccounts → profiles, Pods →
 * WorkloadEndpoints) and one `tessera agent` per node, each programming its node namespace of
 * its own `FixtureNetwork` — the same addresses and interface names as Felix's, so both read
 * the very same Pod objects. The agents are given Felix's failsafe ports (fixture.ts FAILSAFES:
 * their own default adds some) and the differential's `DefaultEndpointToHostAction` (fixture.ts
 * ENDPOINT_TO_HOST_ACTION), as Felix has them.
 *
 * `settle(needle)` has the agents' side of the sentinel (felix-cluster.ts): every node's
 * iptables hold `needle`, every agent has applied all it computed, and the state has stayed the
 * same for `quietMs`.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import type { KubeConfig } from '@kubernetes/client-node';

import type { FailsafeConfig } from '../../src/dataplane/index.ts';
import { issueServiceAccountToken, locateBinaries, pollUntil, waitForCrdsEstablished } from '../controlplane/index.ts';
import { ENDPOINT_TO_HOST_ACTION, FAILSAFES, NODES } from '../differential/fixture.ts';
import { FixtureNetwork, type KernelProbe, type ProbeOptions } from '../differential/fixture-network.ts';
import { REPO_ROOT, TesseraProcess } from '../runner/processes.ts';

const run = promisify(execFile);

export interface TesseraAgentsOptions extends ProbeOptions {
  readonly admin: KubeConfig;
  readonly adminKubeconfigPath: string;
  readonly server: string;
  readonly caPem: string | undefined;
  /** Where kubeconfigs and logs go. */
  readonly dir: string;
  /** @default 250 */
  readonly quietMs?: number;
}

export class TesseraAgents implements AsyncDisposable {
  private readonly processes: TesseraProcess[] = [];
  private readonly agents = new Map<string, TesseraProcess>();
  private net: FixtureNetwork | undefined;
  private readonly quietMs: number;

  private constructor(private readonly o: TesseraAgentsOptions) {
    this.quietMs = o.quietMs ?? 250;
  }

  static async start(o: TesseraAgentsOptions): Promise<TesseraAgents> {
    const t = new TesseraAgents(o);
    try {
      await t.setUp();
    } catch (e) {
      await t[Symbol.asyncDispose]();
      throw e;
    }
    return t;
  }

  /** The agents' log files (for a failure's report). */
  get logDir(): string {
    return this.o.dir;
  }

  private async setUp(): Promise<void> {
    await run(locateBinaries().kubectl, ['--kubeconfig', this.o.adminKubeconfigPath, 'apply', '-f', join(REPO_ROOT, 'manifests')], { maxBuffer: 16 << 20 });
    await waitForCrdsEstablished(this.o.admin, 'projectcalico.org');
    const identity = async (sa: string) =>
      (
        await issueServiceAccountToken(this.o.admin, {
          namespace: 'tessera-system',
          serviceAccount: sa,
          create: false,
          server: this.o.server,
          ...(this.o.caPem === undefined ? {} : { caPem: this.o.caPem }),
          kubeconfigPath: join(this.o.dir, `${sa}.kubeconfig`),
          expirationSeconds: 86_400,
        })
      ).kubeconfigPath;
    const controllersKubeconfig = await identity('tessera-controllers');
    const agentKubeconfig = await identity('tessera-agent');
    const controllers = await TesseraProcess.start(
      'controllers',
      ['controllers', '--kubeconfig', controllersKubeconfig, '--namespace', 'tessera-system', '--api-writes-per-second', '1000', '--workload-interface-naming', 'calico'],
      join(this.o.dir, 'controllers.log'),
    );
    this.processes.push(controllers);
    await pollUntil(async () => ((await controllers.ready()) ? true : undefined), { description: 'the controllers to be ready', timeoutMs: 60_000 });
    this.net = await FixtureNetwork.create(this.o);
    for (const node of NODES) {
      const ports = (list: FailsafeConfig['inbound']) => list.map((p) => `${p.protocol}:${p.port}`).join(',');
      const args = [
        ...['agent', '--node', node, '--netns', this.net.nodeNs(node), '--kubeconfig', agentKubeconfig],
        ...['--default-endpoint-to-host-action', ENDPOINT_TO_HOST_ACTION],
        ...['--failsafe-inbound-host-ports', ports(FAILSAFES.inbound), '--failsafe-outbound-host-ports', ports(FAILSAFES.outbound)],
      ];
      const agent = await TesseraProcess.start('agent', args, join(this.o.dir, `agent-${node}.log`));
      this.processes.push(agent);
      this.agents.set(node, agent);
    }
    for (const [node, agent] of this.agents) await pollUntil(async () => ((await agent.ready()) ? true : undefined), { description: `agent ${node} to be ready`, timeoutMs: 60_000 });
  }

  private assertRunning(): void {
    for (const p of this.processes) if (!p.running) throw new Error(`tessera ${p.name} is no longer running (logs in ${this.o.dir})`);
  }

  /** Waits until every node's state holds `needle`, every agent is idle, and nothing changes for `quietMs`. */
  async settle(needle: string, description: string): Promise<void> {
    await Promise.all(
      NODES.map((node) => {
        const agent = this.agents.get(node)!;
        return settleNode(this.net!.nodeNs(node), needle, {
          quietMs: this.quietMs,
          description: `Tessera's agent on ${node} to apply ${description} (sentinel ${needle})`,
          assertRunning: () => this.assertRunning(),
          ready: async () => {
            const [sent, applied] = await Promise.all([agent.metric('tessera_agent_sent_generation'), agent.metric('tessera_agent_applied_generation')]);
            return sent !== undefined && sent === applied;
          },
        });
      }),
    );
  }

  flushConntrack(): void {
    this.net!.flushConntrack();
  }

  probe(p: KernelProbe, expectAllowed: boolean): Promise<boolean> {
    return this.net!.probe(p, expectAllowed);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.allSettled([...this.processes].reverse().map((p) => p.stop(5_000)));
    this.net?.[Symbol.dispose]();
  }
}

/**
 * A node's iptables (both backends: whichever the agent picked), ip6tables and IP sets, without
 * comments (timestamps) or counters.
 */
export async function dataplaneState(ns: string): Promise<string> {
  const save = (cmd: string) =>
    run('ip', ['netns', 'exec', ns, cmd], { maxBuffer: 64 << 20 }).then(
      (r) => r.stdout,
      () => '',
    );
  const parts = await Promise.all(['iptables-nft-save', 'ip6tables-nft-save', 'iptables-legacy-save', 'ip6tables-legacy-save', 'ipset save'].map((c) => (c === 'ipset save' ? run('ip', ['netns', 'exec', ns, 'ipset', 'save'], { maxBuffer: 64 << 20 }).then((r) => r.stdout) : save(c))));
  return parts.join('\n').split('\n').filter((l) => !l.startsWith('#')).join('\n');
}

/**
 * Waits until the node namespace `ns` holds `needle` in its dataplane state, `ready` (if given)
 * holds, and the whole state is the same across `quietMs`: the end of a round on one node
 * (felix-cluster.ts, "When has Felix applied a round?").
 */
export async function settleNode(
  ns: string,
  needle: string,
  o: { readonly quietMs: number; readonly description: string; readonly assertRunning: () => void; readonly ready?: () => Promise<boolean> },
): Promise<void> {
  let last = '';
  await pollUntil(
    async () => {
      o.assertRunning();
      const state = await dataplaneState(ns);
      if (!state.includes(needle)) return undefined;
      if (o.ready !== undefined && !(await o.ready())) return undefined;
      if (state === last) return true;
      last = state;
      await new Promise((r) => setTimeout(r, o.quietMs));
      return undefined;
    },
    { description: o.description, timeoutMs: 60_000, intervalMs: 25 },
  );
}
