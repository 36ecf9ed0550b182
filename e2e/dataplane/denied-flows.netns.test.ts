/**
 * Attributed drops on real traffic (issue 17 part 3): the drop log through the kernel's NFLOG
 * and a real tcpdump, rule counters from the kernel, in a node namespace with three pods.
 *
 * - a denied probe produces exactly one JSON line naming the rule that dropped it — a deny rule
 *   of a (Kubernetes-converted) NetworkPolicy, a GlobalNetworkPolicy's egress deny, the end of
 *   a tier — with both pods' namespace and name; an allowed probe none;
 * - the deny rule's kernel counter grows by exactly the packets the probes sent;
 * - killing the reader changes no verdict, and the log resumes when it is restarted;
 * - `tessera explain --live` shows the same kernel counters, through the agent's `/rules`;
 * - a staged policy changes no verdict and logs nothing, and its deny rule's counter grows by
 *   the connections it would have denied (issue 17 part 2, on nodes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import { RuleCounters } from '../../src/dataplane/index.ts';
import { DeniedFlowLog, EndpointLookup, resolveFromTables, type DeniedFlow } from '../../src/flowlog/index.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { newRegistry } from '../../src/runtime/metrics.ts';
import { Harness, NAMESPACE, globalNetworkPolicy, matrix, networkPolicy } from './harness.ts';
import { UDP_PORT } from './probes.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runExplain } from '../../src/cli/explain.ts';
import { HealthServer } from '../../src/runtime/health-server.ts';
import type { Update } from '../../src/syncer/index.ts';

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

/** As the converter names a Kubernetes NetworkPolicy `web`: its rule 1 denies UDP. */
const knpWeb = networkPolicy('knp.default.web', {
  selector: "app == 'web'",
  order: 1000,
  types: ['Ingress'],
  ingress: [
    { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'client'" }, destination: { ports: [8080] } },
    { action: 'Deny', protocol: 'UDP' },
  ],
});
const otherNoUdpToClient = globalNetworkPolicy('other-no-udp-to-client', {
  selector: "app == 'other'",
  order: 10,
  types: ['Egress'],
  egress: [{ action: 'Deny', protocol: 'UDP', destination: { selector: "app == 'client'" } }, { action: 'Allow' }],
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('dataplane: attributed drops on real traffic (NFLOG drop log, rule counters)', () => {
  let h: Harness;
  let log: DeniedFlowLog;
  const lines: DeniedFlow[] = [];
  const stop = new AbortController();
  let reading: Promise<void>;
  const registry = newRegistry();
  const endpoints = new EndpointLookup();

  const update = async (updates: Update[]): Promise<void> => {
    endpoints.onUpdates(updates);
    await h.update(updates);
  };
  /** The lines logged while `fn` runs (plus a grace period for the reader). */
  const logged = async (fn: () => Promise<unknown>): Promise<DeniedFlow[]> => {
    const before = lines.length;
    await fn();
    await sleep(400);
    return lines.slice(before);
  };
  const readerUp = async (): Promise<void> => {
    for (let i = 0; i < 100; i++) {
      const up = (await registry.getSingleMetric('tessera_denied_flow_log_reader_up')?.get())?.values[0]?.value;
      if (up === 1) return;
      await sleep(100);
    }
    throw new Error('the NFLOG reader did not start');
  };

  beforeAll(async () => {
    h = await Harness.create({ dropLog: { rate: '100/second', burst: 20 }, registry });
    await update(upsert(...h.baseResources(), knpWeb, otherNoUdpToClient));
    log = new DeniedFlowLog({
      nodeName: 'node-1',
      resolve: resolveFromTables(h.driver.tables),
      endpoint: (ip) => endpoints.lookup(ip),
      sink: (flow) => lines.push(flow),
      commandPrefix: ['ip', 'netns', 'exec', h.topo.nodeNs],
      logger: silentLogger,
      registry,
    });
    reading = log.run(stop.signal);
    await readerUp();
  });
  afterAll(async () => {
    stop.abort();
    await reading;
    await h?.dispose();
  });

  it('a denied probe gives exactly one line naming the rule, tier and both pods; an allowed one none', async () => {
    const web = h.topo.pod('web');
    const client = h.topo.pod('client');
    const other = h.topo.pod('other');

    const denyRule = await logged(() => h.agents.get('client')!.probe('udp', web));
    expect(denyRule).toHaveLength(1);
    expect(denyRule[0]).toMatchObject({
      nodeName: 'node-1',
      protocol: 'udp',
      srcIp: client.ip,
      dstIp: web.ip,
      dstPort: UDP_PORT,
      direction: 'ingress',
      decision: 'rule',
      tier: 'default',
      policy: { kind: 'NetworkPolicy', namespace: NAMESPACE, name: 'knp.default.web' },
      kubernetesNetworkPolicy: `${NAMESPACE}/web`,
      rule: 1,
      src: { namespace: NAMESPACE, pod: 'client' },
      dst: { namespace: NAMESPACE, pod: 'web' },
      action: 'deny',
    });

    const endOfTier = await logged(() => h.agents.get('other')!.probe('tcp', web));
    expect(endOfTier).toHaveLength(1);
    expect(endOfTier[0]).toMatchObject({ protocol: 'tcp', srcIp: other.ip, dstIp: web.ip, dstPort: 8080, direction: 'ingress', decision: 'end-of-tier', tier: 'default', src: { pod: 'other' }, dst: { pod: 'web' } });
    expect(endOfTier[0]!.isolatedBy).toEqual([{ kind: 'NetworkPolicy', namespace: NAMESPACE, name: 'knp.default.web', kubernetesNetworkPolicy: `${NAMESPACE}/web` }]);

    const egress = await logged(() => h.agents.get('other')!.probe('udp', client));
    expect(egress).toHaveLength(1);
    expect(egress[0]).toMatchObject({ direction: 'egress', decision: 'rule', tier: 'default', policy: { kind: 'GlobalNetworkPolicy', name: 'other-no-udp-to-client' }, rule: 0, src: { pod: 'other' }, dst: { pod: 'client' } });
    expect(egress[0]).not.toHaveProperty('kubernetesNetworkPolicy');

    expect(await logged(() => h.agents.get('client')!.probe('tcp', web, 2_000))).toEqual([]);
  });

  it('the deny rule\'s kernel counter grows by exactly the packets sent; the log has one line per flow', async () => {
    const counters = new RuleCounters({ tables: h.driver.tables, logger: silentLogger, registry });
    const denyCount = async (): Promise<number> =>
      (await counters.read()).find((c) => c.name === 'knp.default.web' && c.direction === 'ingress' && c.rule === '1')?.packets ?? 0;
    const before = await denyCount();
    const probes = 7;
    const got = await logged(async () => {
      for (let i = 0; i < probes; i++) expect(await h.agents.get('client')!.probe('udp', h.topo.pod('web'), 200)).toBe(false);
    });
    expect((await denyCount()) - before).toBe(probes);
    // Each probe is a new socket, so a new flow: one line each.
    expect(got.filter((l) => l.rule === 1 && l.policy?.name === 'knp.default.web')).toHaveLength(probes);

    const all = await counters.read();
    expect(all.find((c) => c.rule === 'end-of-tier' && c.tier === 'default' && c.direction === 'ingress')?.packets).toBeGreaterThan(0);
    expect(all.find((c) => c.name === 'knp.default.web' && c.rule === '0' && c.action === 'allow')?.packets).toBeGreaterThan(0);
    const text = await registry.getSingleMetricAsString('tessera_rule_packets_total');
    expect(text).toMatch(/tessera_rule_packets_total\{tier="default",kind="NetworkPolicy",namespace="shop",name="knp.default.web",direction="ingress",rule="1",action="deny"\} \d+/);
  });

  it('killing the reader changes no verdict, and the log resumes once it is restarted', async () => {
    const expected = matrix(['client->web/udp', 'other->web/tcp', 'other->web/udp', 'other->client/udp']);
    expect(await h.check(expected)).toEqual([]);
    const pid = log.readerPid;
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');
    await sleep(100);
    expect(await h.check(expected)).toEqual([]);
    await readerUp();
    const again = await logged(() => h.agents.get('client')!.probe('udp', h.topo.pod('web')));
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ policy: { name: 'knp.default.web' }, rule: 1 });
    const restarts = (await registry.getSingleMetric('tessera_denied_flow_log_reader_restarts_total')?.get())?.values[0]?.value;
    expect(restarts).toBe(1);
  });

  it('tessera explain --live names the deciding rule with the packets the node\'s kernel counted for it', async () => {
    expect(await h.agents.get('client')!.probe('tcp', h.topo.pod('web'), 2_000)).toBe(true);
    expect(await h.agents.get('client')!.probe('udp', h.topo.pod('web'))).toBe(false);
    const counters = new RuleCounters({ tables: h.driver.tables, logger: silentLogger, minIntervalMs: 0 });
    const server = await HealthServer.listen({ registry: newRegistry(), ready: () => true, port: 0, host: '127.0.0.1', json: { '/rules': () => counters.recent() } });
    try {
      const denied = (await counters.read()).find((c) => c.name === 'knp.default.web' && c.direction === 'ingress' && c.rule === '1')!.packets;
      const dir = mkdtempSync(path.join(tmpdir(), 'tsr-live-'));
      const file = path.join(dir, 'cluster.yaml');
      writeFileSync(file, [...h.baseResources(), knpWeb, otherNoUdpToClient].map((r) => JSON.stringify(r)).join('\n---\n'));
      let stdout = '';
      let stderr = '';
      const out = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t) };
      const url = `http://127.0.0.1:${server.port}`;
      const code = await runExplain(['--from', `${NAMESPACE}/client`, '--to', `${NAMESPACE}/web`, '--port', String(UDP_PORT), '--protocol', 'UDP', '-f', file, '--live', '--agent-url', `node-1=${url}`], out);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toContain('DENIED');
      expect(stdout).toContain('live: kernel counters on the nodes');
      expect(stdout).toContain(`ingress of ${NAMESPACE}/web on node-1:`);
      expect(stdout).toContain(`→ tier default, NetworkPolicy ${NAMESPACE}/knp.default.web rule 1 (deny): ${denied} packets`);
      // client → web over TCP 8080 is allowed by rule 0, which counted the allowed probes' first packets.
      stdout = '';
      await runExplain(['--from', `${NAMESPACE}/client`, '--to', `${NAMESPACE}/web`, '--port', '8080', '-f', file, '--live', '--agent-url', `node-1=${url}`], out);
      expect(stdout).toMatch(new RegExp(`→ tier default, NetworkPolicy ${NAMESPACE}/knp.default.web rule 0 \\(allow\\): [1-9]\\d* packets`));
    } finally {
      await server.close();
    }
  });

  it('a staged deny changes no verdict and logs nothing; its rule counts the connections it would deny', async () => {
    const tighten = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'StagedNetworkPolicy',
      metadata: { name: 'tighten-web', namespace: NAMESPACE },
      spec: { stagedAction: 'Set', tier: 'default', order: 1, selector: "app == 'web'", types: ['Ingress'], ingress: [{ action: 'Deny', protocol: 'TCP', source: { selector: "app == 'client'" } }] },
    } as unknown as V3Resource;
    await update(upsert(tighten));
    const expected = matrix(['client->web/udp', 'other->web/tcp', 'other->web/udp', 'other->client/udp']);
    expect(await h.check(expected)).toEqual([]);
    const counters = new RuleCounters({ tables: h.driver.tables, logger: silentLogger });
    const stagedDeny = async (): Promise<number | undefined> =>
      (await counters.read()).find((c) => c.kind === 'StagedNetworkPolicy' && c.name === 'tighten-web' && c.direction === 'ingress' && c.rule === '0' && c.action === 'deny')?.packets;
    const before = (await stagedDeny())!;
    const connections = 5;
    const got = await logged(async () => {
      for (let i = 0; i < connections; i++) expect(await h.agents.get('client')!.probe('tcp', h.topo.pod('web'), 2_000)).toBe(true);
    });
    expect(got).toEqual([]);
    // One new connection, one packet through the staged chain (the rest are ESTABLISHED).
    expect((await stagedDeny())! - before).toBe(connections);
    // other → web TCP is not what the staged rule denies: not counted by it.
    expect(await h.agents.get('other')!.probe('tcp', h.topo.pod('web'))).toBe(false);
    expect((await stagedDeny())! - before).toBe(connections);
    const save = h.saveNode();
    expect(save).toMatch(/-A cali-pi-snp\/shop\/tighten-web .*-j RETURN/);
    expect(save).not.toMatch(/-A cali-pi-snp\/shop\/tighten-web .*(DROP|REJECT|NFLOG|MARK)/);
  });
});
