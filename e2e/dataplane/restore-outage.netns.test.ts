/**
 * An iptables-restore outage on a real node never stops the agent (issue 19 point 3): the real
 * agent wiring (informers → calc graph → dataplane driver) programs a real network namespace
 * through a runner whose `iptables-nft-restore` is a wrapper that fails while a flag file
 * exists and otherwise runs the real one — the kernel, `iptables-save` and `ipset` are real
 * throughout.
 *
 * During the outage a Deny arrives. The agent stays alive and reports not-ready; the kernel
 * keeps its last rules (nothing can be written, so the Deny is not enforced yet — what Felix's
 * restart loop would leave in place for minutes). When the outage ends, the pending state is
 * written at the next backoff retry, without a restart: the Deny is enforced and the agent is
 * ready again.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.ts';
import type { NetworkPolicy, V3Resource } from '../../src/api/index.ts';
import { NetnsCommandRunner, type CommandResult, type CommandRunner, type RunOptions } from '../../src/dataplane/index.ts';
import type { KubeObject } from '../../src/informers/index.ts';
import { ScriptedListerWatcher } from '../../test/informers/scripted-lister-watcher.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { Harness, NODE, networkPolicy } from './harness.ts';
import type { Expectation } from './probes.ts';
import { AGENT_RESOURCES } from '../../src/syncer/index.ts';

const RESTORE = 'iptables-nft-restore';

/** Runs `iptables-nft-restore` as `wrapper` (inside the namespace); everything else as asked. */
class WrappedRestoreRunner implements CommandRunner {
  constructor(
    private readonly inner: CommandRunner,
    private readonly wrapper: string,
  ) {}

  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<CommandResult> {
    return this.inner.run(cmd === RESTORE ? this.wrapper : cmd, args, opts);
  }
}

const webIngress = (action: 'Allow' | 'Deny', resourceVersion: string): NetworkPolicy => {
  const p = networkPolicy('web-ingress', {
    selector: "app == 'web'",
    types: ['Ingress'],
    ingress: [
      { action, protocol: 'TCP', source: { selector: "app == 'client'" } },
      { action: 'Allow', protocol: 'UDP' },
    ],
  });
  return { ...p, metadata: { ...p.metadata, resourceVersion } };
};

const tcp = (from: string, to: string, allowed: boolean): Expectation => ({ from, to, kind: 'tcp', family: 4, allowed });

/** Waits for `cond` on the real clock (the agent's commands take real time), failing after `timeoutMs`. */
async function waitFor(cond: () => boolean, description: string, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('agent: an iptables-restore outage never stops the agent', () => {
  let h: Harness;
  let dir: string;
  let flag: string;
  let agent: RunningAgent;
  const abort = new AbortController();
  const registry = newRegistry();
  const logLines: string[] = [];
  const lws = new Map<string, ScriptedListerWatcher<KubeObject>>();

  beforeAll(async () => {
    h = await Harness.create();
    // Only the topology and the probes are used: the agent below programs the node.
    await h.stopDriver();
    dir = mkdtempSync(join(tmpdir(), 'fc-outage-'));
    flag = join(dir, 'outage');
    const wrapper = join(dir, RESTORE);
    writeFileSync(wrapper, `#!/bin/sh\n# fails while ${flag} exists, else runs the real ${RESTORE}\nif [ -e '${flag}' ]; then\n  echo '${RESTORE}: simulated outage' >&2\n  exit 1\nfi\nexec ${RESTORE} "$@"\n`);
    chmodSync(wrapper, 0o755);

    const lists: Record<string, V3Resource[]> = {
      tiers: h.baseResources().filter((r) => r.kind === 'Tier'),
      profiles: h.baseResources().filter((r) => r.kind === 'Profile'),
      globalnetworkpolicies: [],
      networkpolicies: [webIngress('Allow', '1')],
      workloadendpoints: h.baseResources().filter((r) => r.kind === 'WorkloadEndpoint'),
    };
    for (const { plural } of AGENT_RESOURCES) {
      const lw = new ScriptedListerWatcher<KubeObject>(plural);
      lw.queueList({ items: (lists[plural] ?? []) as unknown as KubeObject[], resourceVersion: '1' });
      lws.set(plural, lw);
    }
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
    const runner = new WrappedRestoreRunner(new NetnsCommandRunner(h.topo.nodeNs), wrapper);
    agent = startAgent({ nodeName: NODE, listerWatcherFor: (r) => lws.get(r.plural)!, runner, registry, logger }, abort.signal);
  });

  afterAll(async () => {
    abort.abort();
    await agent?.done;
    await h?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('stays alive and not ready through the outage, then enforces the Deny that arrived during it without a restart', async () => {
    await waitFor(() => agent.ready(), 'the first in-sync apply');
    expect(await h.check([tcp('client', 'web', true), tcp('other', 'web', false)])).toEqual([]);

    writeFileSync(flag, '');
    const watch = await lws.get('networkpolicies')!.nextWatch();
    watch.send({ type: 'MODIFIED', object: webIngress('Deny', '2') as unknown as KubeObject });
    await waitFor(() => agent.driver.health().consecutiveFailures >= 2, 'two failed applies');

    let stopped = false;
    void agent.done.then(() => (stopped = true));
    expect(stopped).toBe(false);
    expect(agent.ready()).toBe(false);
    const health = agent.driver.health();
    expect(health.lastError).toContain('simulated outage');
    expect(health.lastSuccessAt).toBeDefined();
    const metrics = await registry.metrics();
    expect(metrics).toMatch(/^tessera_agent_ready 0$/m);
    expect(Number(/^felix_int_dataplane_failures (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);
    // Nothing could be written: the kernel keeps the rules it had.
    expect(await h.check([tcp('client', 'web', true)])).toEqual([]);
    expect(agent.generations().applied).toBeLessThan(agent.generations().sent);

    rmSync(flag);
    await waitFor(() => agent.ready(), 'the first apply after the outage');
    expect(await h.check([tcp('client', 'web', false), tcp('other', 'web', false)])).toEqual([]);
    expect(agent.generations().applied).toBe(agent.generations().sent);
    expect(agent.driver.health()).toMatchObject({ consecutiveFailures: 0, retryAt: undefined });
    expect(await registry.metrics()).toMatch(/^tessera_agent_ready 1$/m);
    expect(logLines.map((l) => JSON.parse(l) as { msg: string }).some((l) => l.msg === 'dataplane apply succeeded again: the kernel holds the desired state')).toBe(true);
    expect(stopped).toBe(false);
  });
});
