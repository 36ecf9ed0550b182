/**
 * The real `tessera agent` process on a node (a network namespace) that already holds state:
 *
 * - Felix's `cali-` chains, or Felix's IP sets alone, without Tessera's marker: the agent
 *   refuses — exit 4, one error line naming what it found, no stack trace — and touches nothing;
 * - Tessera's own state from an earlier run: it starts normally (nothing rewritten before it is
 *   in sync) and stops leaving the rules in place;
 * - `--iptables-backend auto` on a node whose kubelet uses legacy: it logs the choice and why,
 *   and its marker lands in iptables-legacy, not in nft.
 *
 * No API server is needed: every check happens before the informers sync (the kubeconfig names
 * an address nothing listens on, so the agent keeps retrying until it is stopped).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { claimOwnership } from '../../src/dataplane/iptables/ownership.ts';
import { createNetns } from '../dataplane/netns.ts';
import { inNs, nodeStateSnapshot } from '../dataplane/node-state.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
type LogLine = Record<string, unknown>;

const FELIX_FILTER = `*filter
:cali-FORWARD - [0:0]
-A FORWARD -m comment --comment "cali:wUHhoiAYhphO9Mso" -j cali-FORWARD
-A cali-FORWARD -m comment --comment "cali:vjrMJCRpqwy5oRoX" -j MARK --set-xmark 0x0/0xe0000
COMMIT
`;

let dir: string;
let kubeconfig: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bk-agent-'));
  kubeconfig = join(dir, 'kubeconfig');
  // Port 1 on loopback: refused at once, so the agent keeps its informers retrying.
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: t}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
      '',
    ].join('\n'),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function agentArgs(ns: string, extra: readonly string[] = []): string[] {
  return ['--import', 'tsx', 'src/cli/main.ts', 'agent', '--node', 'n1', '--netns', ns, '--kubeconfig', kubeconfig, '--metrics-port', '0', '--metrics-host', '127.0.0.1', ...extra];
}

/** Runs the agent to completion (it is expected to refuse). */
function refusedAgent(ns: string): { status: number | null; lines: LogLine[]; stderr: string } {
  const r = spawnSync(process.execPath, agentArgs(ns), { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
  return { status: r.status, lines, stderr: r.stderr };
}

/** A running agent: its log lines as they come, a wait for one, and a SIGTERM stop. */
class RunningAgent {
  readonly lines: LogLine[] = [];
  private readonly waiters: Array<() => void> = [];
  private readonly exited: Promise<number | null>;

  constructor(ns: string, extra: readonly string[] = []) {
    const child = spawn(process.execPath, agentArgs(ns, extra), { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    readline.createInterface({ input: child.stdout }).on('line', (l) => {
      if (!l.startsWith('{')) return;
      this.lines.push(JSON.parse(l) as LogLine);
      for (const w of this.waiters.splice(0)) w();
    });
    this.stop = async () => {
      child.kill('SIGTERM');
      return this.exited;
    };
  }

  readonly stop: () => Promise<number | null>;

  /** Resolves with the first line matching `pred`; rejects if the agent exits first or after 60 s (liveness bound). */
  async waitFor(pred: (l: LogLine) => boolean): Promise<LogLine> {
    const deadline = Date.now() + 60_000;
    let done = false;
    void this.exited.then(() => {
      done = true;
      for (const w of this.waiters.splice(0)) w();
    });
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit !== undefined) return hit;
      if (done) throw new Error(`agent exited before the line; it logged: ${JSON.stringify(this.lines)}`);
      if (Date.now() > deadline) throw new Error(`no such line within 60 s; it logged: ${JSON.stringify(this.lines)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1_000);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

describe('tessera agent and the state it finds on the node', () => {
  const namespaces: Array<{ destroy: () => void }> = [];
  const agents: RunningAgent[] = [];
  const fresh = (): string => {
    const ns = createNetns('bk');
    namespaces.push(ns);
    return ns.name;
  };
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.stop();
    for (const ns of namespaces.splice(0)) ns.destroy();
  });

  it("Felix's cali- chains without Tessera's marker: exit 4, one error line naming them, nothing touched", () => {
    const ns = fresh();
    inNs(ns, ['iptables-nft-restore', '--noflush'], FELIX_FILTER);
    const before = nodeStateSnapshot(ns);
    const r = refusedAgent(ns);
    expect(r.status).toBe(4);
    const errors = r.lines.filter((l) => l['level'] === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ msg: "refusing to start: this node's cali- chains or IP sets belong to another Calico dataplane (Felix), not Tessera" });
    expect(String(errors[0]!['reason'])).toContain("iptables-nft filter holds cali- chains (cali-FORWARD) without Tessera's marker chain cali-tessera-owner");
    expect(r.stderr).not.toMatch(/at .*\.ts:\d+/);
    expect(nodeStateSnapshot(ns)).toBe(before);
  });

  it("Felix's IP sets alone (no chains, no marker): exit 4", () => {
    const ns = fresh();
    inNs(ns, ['ipset', 'create', 'cali40all-ipam-pools', 'hash:net']);
    const before = nodeStateSnapshot(ns);
    const r = refusedAgent(ns);
    expect(r.status).toBe(4);
    expect(String(r.lines.find((l) => l['level'] === 'error')?.['reason'])).toContain("IP sets cali40all-ipam-pools exist but no iptables table holds Tessera's marker chain");
    expect(nodeStateSnapshot(ns)).toBe(before);
  });

  it("Tessera's own state from an earlier run: starts normally, rewrites nothing before in-sync, leaves it in place on SIGTERM", async () => {
    const ns = fresh();
    const runner = new NetnsCommandRunner(ns);
    await claimOwnership(runner, 'nft');
    const driver = new DataplaneDriver({ runner, backend: 'nft', ipVersions: [4, 6] });
    const stop = new AbortController();
    const running = driver.run(stop.signal);
    driver.send([{ type: 'IPSetUpdate', id: 's:earlier', ipsetType: 'hash:net', members: ['10.65.0.2/32'] }, { type: 'InSync' }]);
    await driver.flushed();
    stop.abort();
    await running;
    const before = nodeStateSnapshot(ns);
    expect(before).toContain(':cali-tessera-owner - [0:0]');

    const agent = new RunningAgent(ns);
    agents.push(agent);
    await agent.waitFor((l) => l['msg'] === 'serving /metrics, /livez, /readyz, /rules');
    expect(agent.lines.filter((l) => l['level'] === 'error')).toEqual([]);
    expect(agent.lines.find((l) => String(l['msg']).startsWith('programming iptables-'))).toMatchObject({ iptablesBackend: 'nft', mode: 'auto' });
    expect(await agent.stop()).toBe(0);
    agents.length = 0;
    expect(nodeStateSnapshot(ns)).toBe(before);
  });

  it('auto on a node whose kubelet uses legacy: logs legacy and why, and claims the node in legacy only', async () => {
    const ns = fresh();
    inNs(ns, ['iptables-legacy-restore', '--noflush'], '*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n');
    const agent = new RunningAgent(ns);
    agents.push(agent);
    const chosen = await agent.waitFor((l) => String(l['msg']).startsWith('programming iptables-'));
    expect(chosen).toMatchObject({ msg: 'programming iptables-legacy', iptablesBackend: 'legacy', mode: 'auto' });
    expect(String(chosen['reason'])).toContain("kubelet's KUBE-IPTABLES-HINT chain is in iptables-legacy");
    await agent.waitFor((l) => l['msg'] === 'serving /metrics, /livez, /readyz, /rules');
    expect(inNs(ns, ['iptables-legacy-save', '-t', 'filter'])).toContain(':cali-tessera-owner - [0:0]');
    expect(inNs(ns, ['iptables-nft-save'])).not.toContain('cali-');
  });

  it('an unknown --iptables-backend is a usage error (exit 2)', () => {
    const r = spawnSync(process.execPath, agentArgs(fresh(), ['--iptables-backend', 'iptables']), { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--iptables-backend must be auto, nft or legacy, not "iptables"');
  });

  it('an explicit --iptables-backend that disagrees with the node is used, with a warning', async () => {
    const ns = fresh();
    inNs(ns, ['iptables-legacy-restore', '--noflush'], '*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n');
    const agent = new RunningAgent(ns, ['--iptables-backend', 'nft']);
    agents.push(agent);
    const warning = await agent.waitFor((l) => l['level'] === 'warn' && String(l['msg']).includes('two rulesets'));
    expect(warning).toMatchObject({ iptablesBackend: 'nft', detected: 'legacy' });
    await agent.waitFor((l) => l['msg'] === 'serving /metrics, /livez, /readyz, /rules');
    expect(inNs(ns, ['iptables-nft-save', '-t', 'filter'])).toContain(':cali-tessera-owner - [0:0]');
  });
});
