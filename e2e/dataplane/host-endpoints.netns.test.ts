/**
 * HostEndpoints on real IPv4 and IPv6 traffic into, out of and through a node namespace, the
 * dataplane fed the proto messages directly (the calc graph programs the pods; the last case
 * drives a v3 HostEndpoint and GlobalNetworkPolicy through the calc graph): an "external"
 * namespace sits behind the node's `ext0` (192.168.50.0/24, fd00:50::/64, routes to the pods via
 * the node), a probe agent serves and probes in the node namespace itself (the host's processes)
 * and another in the external one. Cases from Felix's FV tests (hostendpoints_test.go,
 * apply_on_forward_test.go, pre_dnat_test.go, donottrack_test.go): a `*` HostEndpoint with no
 * policy, with the allow-all profile, with a GNP opening one port, egress, per-direction default
 * deny, applyOnForward, preDNAT, doNotTrack (and conntrack then holds no entry), and an
 * expectedIPs HostEndpoint on a named interface.
 *
 * The external link's neighbours are static: IPv6 neighbour discovery to the node is host
 * traffic like any other, which a HostEndpoint without an ICMPv6 allow may drop (as in Felix),
 * and resolving neighbours is not what these tests test.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gnpId, hostEndpoint, policy, port, rule, tier } from '../../test/dataplane/fixtures.ts';
import type { V3Resource } from '../../src/api/index.ts';
import type { DataplaneMessage, HostEndpoint, Policy, PolicyId } from '../../src/proto/index.ts';
import { DUAL_STACK_PODS, Harness, NODE, globalNetworkPolicy } from './harness.ts';
import { Prober, type IpFamily } from './probes.ts';

const NODE_IP = { 4: '192.168.50.1', 6: 'fd00:50::1' } as const;
const EXT_IP = { 4: '192.168.50.2', 6: 'fd00:50::2' } as const;
const EXT_NETS = ['192.168.50.0/24', 'fd00:50::/64'];
const WEB = { 4: DUAL_STACK_PODS.find((p) => p.name === 'web')!.ip, 6: DUAL_STACK_PODS.find((p) => p.name === 'web')!.ip6! } as const;
const DEFAULT_ALLOW = 'projectcalico-default-allow';

type Who = 'host' | 'ext' | 'client';
interface Probe {
  readonly from: Who;
  /** `host`: the node's ext0 address; `ext`; `web`: the pod. */
  readonly to: 'host' | 'ext' | 'web';
  readonly proto: 'tcp' | 'udp';
  readonly port: number;
  readonly allowed: boolean;
}
const p = (from: Who, to: Probe['to'], proto: 'tcp' | 'udp', port: number, allowed: boolean): Probe => ({ from, to, proto, port, allowed });

/** What the host endpoint tests send: the policies, profiles and host endpoints in force. */
interface HostState {
  readonly policies?: ReadonlyArray<{ id: PolicyId; policy: Policy }>;
  readonly defaultAllow?: boolean;
  readonly heps: ReadonlyArray<{ name: string; endpoint: HostEndpoint }>;
}

const sel = (over: Partial<Policy>, inbound: Policy['inboundRules'], outbound: Policy['outboundRules'] = []): Policy => ({ ...policy(inbound, outbound), ...over });
const fromExt = (over: Parameters<typeof rule>[0] = {}) => rule({ srcNets: EXT_NETS, ...over });

describe('dataplane: host endpoints on real traffic (IPv4 and IPv6)', () => {
  let h: Harness;
  let extNs: string;
  let hostAgent: Prober;
  let extAgent: Prober;
  let sent: HostState = { heps: [] };
  const node = (args: readonly string[]): string => h.topo.exec(h.topo.nodeNs, args);
  const ext = (args: readonly string[]): string => h.topo.exec(extNs, args);

  /** Sends `next` (updates first, then removes of what `next` no longer holds) and waits for the kernel. */
  async function setHostState(next: HostState): Promise<void> {
    const msgs: DataplaneMessage[] = [];
    if (next.defaultAllow === true) msgs.push({ type: 'ActiveProfileUpdate', id: { name: DEFAULT_ALLOW }, profile: { inboundRules: [rule()], outboundRules: [rule()] } });
    for (const { id, policy: pol } of next.policies ?? []) msgs.push({ type: 'ActivePolicyUpdate', id, policy: pol });
    for (const { name, endpoint } of next.heps) msgs.push({ type: 'HostEndpointUpdate', id: { name }, endpoint });
    for (const { name } of sent.heps) if (!next.heps.some((x) => x.name === name)) msgs.push({ type: 'HostEndpointRemove', id: { name } });
    for (const { id } of sent.policies ?? []) if (!(next.policies ?? []).some((x) => x.id.name === id.name)) msgs.push({ type: 'ActivePolicyRemove', id });
    if (sent.defaultAllow === true && next.defaultAllow !== true) msgs.push({ type: 'ActiveProfileRemove', id: { name: DEFAULT_ALLOW } });
    sent = next;
    h.driver.send(msgs);
    await h.driver.flushed();
  }

  /** Runs every probe in both families; returns the ones whose verdict differs. */
  async function check(probes: readonly Probe[]): Promise<string[]> {
    const out = await Promise.all(
      probes.flatMap((pr) =>
        ([4, 6] as const).map(async (family: IpFamily) => {
          const host = pr.to === 'host' ? NODE_IP[family] : pr.to === 'ext' ? EXT_IP[family] : WEB[family];
          const from = pr.from === 'host' ? hostAgent : pr.from === 'ext' ? extAgent : h.agents.get('client')!;
          const probeOnce = (ms: number): Promise<boolean> => from.probeAddress(pr.proto, host, pr.port, ms);
          let ok = await probeOnce(500);
          if (!ok && pr.allowed) ok = await probeOnce(3_000);
          return ok === pr.allowed ? undefined : `${pr.from} → ${pr.to} ${pr.proto}/${pr.port}${family === 6 ? ' (v6)' : ''}: expected ${pr.allowed ? 'allowed' : 'blocked'}, got ${ok ? 'allowed' : 'blocked'}`;
        }),
      ),
    );
    return out.filter((x): x is string => x !== undefined);
  }

  beforeAll(async () => {
    h = await Harness.create({ ipVersions: [4, 6] }, DUAL_STACK_PODS);
    await h.update(h.baseResources().map((resource) => ({ op: 'upsert' as const, resource })));
    extNs = `${h.topo.nodeNs.slice(0, -'node'.length)}ext`;
    execIp(['netns', 'add', extNs]);
    execIp(['link', 'add', 'ext0', 'netns', h.topo.nodeNs, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', extNs]);
    node(['sysctl', '-qw', 'net.ipv6.conf.ext0.accept_dad=0']);
    node(['ip', 'addr', 'add', `${NODE_IP[4]}/24`, 'dev', 'ext0']);
    node(['ip', '-6', 'addr', 'add', `${NODE_IP[6]}/64`, 'dev', 'ext0', 'nodad']);
    node(['ip', 'link', 'set', 'ext0', 'up']);
    ext(['ip', 'link', 'set', 'lo', 'up']);
    ext(['sysctl', '-qw', 'net.ipv6.conf.eth0.accept_dad=0']);
    ext(['ip', 'addr', 'add', `${EXT_IP[4]}/24`, 'dev', 'eth0']);
    ext(['ip', '-6', 'addr', 'add', `${EXT_IP[6]}/64`, 'dev', 'eth0', 'nodad']);
    ext(['ip', 'link', 'set', 'eth0', 'up']);
    ext(['ip', 'route', 'add', '10.65.0.0/16', 'via', NODE_IP[4]]);
    ext(['ip', '-6', 'route', 'add', 'fd00:65::/64', 'via', NODE_IP[6]]);
    const mac = (run: (a: readonly string[]) => string, dev: string): string => (JSON.parse(run(['ip', '-j', 'link', 'show', dev])) as Array<{ address: string }>)[0]!.address;
    const nodeMac = mac(node, 'ext0');
    const extMac = mac(ext, 'eth0');
    for (const f of [4, 6] as const) {
      node(['ip', 'neigh', 'replace', EXT_IP[f], 'lladdr', extMac, 'dev', 'ext0', 'nud', 'permanent']);
      ext(['ip', 'neigh', 'replace', NODE_IP[f], 'lladdr', nodeMac, 'dev', 'eth0', 'nud', 'permanent']);
    }
    hostAgent = await Prober.startIn(
      h.topo.nodeNs,
      [
        { port: 8080, protocol: 'TCP' },
        { port: 5353, protocol: 'UDP' },
        { port: 22, protocol: 'TCP' },
      ],
      true,
    );
    extAgent = await Prober.startIn(
      extNs,
      [
        { port: 8080, protocol: 'TCP' },
        { port: 5353, protocol: 'UDP' },
        { port: 6443, protocol: 'TCP' },
      ],
      true,
    );
  });

  afterAll(async () => {
    hostAgent?.stop();
    extAgent?.stop();
    await h?.dispose();
    if (extNs !== undefined) {
      try {
        execIp(['netns', 'del', extNs]);
      } catch {
        // Already gone.
      }
    }
  });

  it('before any HostEndpoint the host is open both ways', async () => {
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('host', 'ext', 'tcp', 8080, true), p('ext', 'web', 'tcp', 8080, true)])).toEqual([]);
  });

  it('a * HostEndpoint with no policy: host traffic denied both ways except the failsafe ports; pod ↔ pod, forwarded and host → local pod unaffected', async () => {
    await setHostState({ heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*' }) }] });
    expect(
      await check([
        p('ext', 'host', 'tcp', 8080, false),
        p('ext', 'host', 'udp', 5353, false),
        p('ext', 'host', 'tcp', 22, true),
        p('host', 'ext', 'tcp', 8080, false),
        p('host', 'ext', 'udp', 5353, false),
        p('host', 'ext', 'tcp', 6443, true),
        p('host', 'web', 'tcp', 8080, true),
        p('client', 'web', 'tcp', 8080, true),
        p('ext', 'web', 'tcp', 8080, true),
      ]),
    ).toEqual([]);
    expect(h.saveNode(4)).toContain(':cali-fh-any-interface-at-all');
    expect(h.saveNode(6)).toMatch(/-A cali-from-host-endpoint .*-g cali-fh-any-interface-at-all/);
  });

  it('the * HostEndpoint with the allow-all profile: open both ways', async () => {
    await setHostState({ defaultAllow: true, heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*', profileIds: [DEFAULT_ALLOW] }) }] });
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('ext', 'host', 'udp', 5353, true), p('host', 'ext', 'tcp', 8080, true), p('client', 'web', 'udp', 5353, true)])).toEqual([]);
  });

  it('a GNP opening one port to the host; per-direction default deny leaves the host unable to send', async () => {
    const open = { id: gnpId('host-8080'), policy: policy([rule({ protocol: 'tcp', dstPorts: [port(8080)] })]) };
    await setHostState({ policies: [open], heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*', tiers: [tier('default', [open.id])] }) }] });
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('ext', 'host', 'udp', 5353, false), p('host', 'ext', 'tcp', 8080, false), p('host', 'ext', 'tcp', 6443, true)])).toEqual([]);
  });

  it('egress from the host: a GNP allowing the host out to one port; ingress stays denied', async () => {
    const out = { id: gnpId('host-out-8080'), policy: policy([], [rule({ protocol: 'tcp', dstPorts: [port(8080)] })]) };
    await setHostState({ policies: [out], heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*', tiers: [tier('default', [], [out.id])] }) }] });
    expect(await check([p('host', 'ext', 'tcp', 8080, true), p('host', 'ext', 'udp', 5353, false), p('ext', 'host', 'tcp', 8080, false)])).toEqual([]);
  });

  it('applyOnForward: forwarded traffic from outside to a pod meets the * HostEndpoint forward policy; so does pod ↔ pod (Felix: the * forward chains catch it)', async () => {
    const fwd = { id: gnpId('fwd-8080'), policy: sel({ applyOnForward: true }, [fromExt({ protocol: 'tcp', dstPorts: [port(8080)] })]) };
    const t = [tier('default', [fwd.id])];
    await setHostState({ defaultAllow: true, policies: [fwd], heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*', profileIds: [DEFAULT_ALLOW], tiers: t, forwardTiers: t }) }] });
    expect(
      await check([
        p('ext', 'web', 'tcp', 8080, true),
        p('ext', 'web', 'udp', 5353, false),
        p('ext', 'host', 'tcp', 8080, true),
        p('ext', 'host', 'udp', 5353, false),
        p('client', 'web', 'udp', 5353, false),
        p('host', 'ext', 'tcp', 8080, true),
      ]),
    ).toEqual([]);
  });

  it('preDNAT: a deny before routing drops traffic to the host and forwarded to a pod alike; the rest goes on to normal policy', async () => {
    const pre = { id: gnpId('pre-deny-8080'), policy: sel({ preDnat: true, applyOnForward: true }, [fromExt({ action: 'deny', protocol: 'tcp', dstPorts: [port(8080)] })]) };
    await setHostState({
      defaultAllow: true,
      policies: [pre],
      heps: [{ name: 'node-1-all', endpoint: hostEndpoint({ name: '*', profileIds: [DEFAULT_ALLOW], preDnatTiers: [tier('default', [pre.id], [], 'Pass')] }) }],
    });
    expect(
      await check([
        p('ext', 'host', 'tcp', 8080, false),
        p('ext', 'host', 'udp', 5353, true),
        p('ext', 'web', 'tcp', 8080, false),
        p('ext', 'web', 'udp', 5353, true),
        p('client', 'web', 'tcp', 8080, true),
      ]),
    ).toEqual([]);
    expect(node(['iptables-nft-save', '-t', 'mangle'])).toMatch(/-A cali-fh-any-interface-at-all .*-j cali-pi-gnp\/pre-deny-8080/);
  });

  it('doNotTrack on a named interface: allowed untracked both ways (conntrack holds no entry for it), failsafes tracked, the rest denied', async () => {
    const nt = {
      id: gnpId('notrack-8080'),
      policy: sel({ untracked: true, applyOnForward: true }, [fromExt({ protocol: 'tcp', dstPorts: [port(8080)] })], [rule({ protocol: 'tcp', srcPorts: [port(8080)], dstNets: EXT_NETS })]),
    };
    await setHostState({ policies: [nt], heps: [{ name: 'ext0-hep', endpoint: hostEndpoint({ name: 'ext0', untrackedTiers: [tier('default', [nt.id], [nt.id], 'Pass')] }) }] });
    node(['conntrack', '-F']);
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('ext', 'host', 'tcp', 22, true), p('ext', 'host', 'udp', 5353, false)])).toEqual([]);
    const table = node(['conntrack', '-L']);
    for (const f of [4, 6] as const) {
      expect(table).not.toMatch(new RegExp(`dst=${NODE_IP[f]} sport=\\d+ dport=8080 `));
      expect(table).toMatch(new RegExp(`dst=${NODE_IP[f]} sport=\\d+ dport=22 `));
    }
    expect(node(['iptables-nft-save', '-t', 'raw'])).toMatch(/-A cali-fh-ext0 .*-j NOTRACK/);
  });

  it('an expectedIPs HostEndpoint is matched to the interface holding its address, in both families', async () => {
    await setHostState({ heps: [{ name: 'by-ip', endpoint: hostEndpoint({ expectedIpv4Addrs: [NODE_IP[4]] }) }] });
    expect(await check([p('ext', 'host', 'tcp', 8080, false), p('ext', 'host', 'tcp', 22, true), p('host', 'ext', 'tcp', 8080, false), p('ext', 'web', 'tcp', 8080, true)])).toEqual([]);
    expect(h.saveNode(6)).toMatch(/^-A cali-from-host-endpoint (?=.*-i ext0 )(?=.*-g cali-fh-ext0).*$/m);
  });

  it('removing the last HostEndpoint opens the host again', async () => {
    await setHostState({ heps: [] });
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('host', 'ext', 'tcp', 8080, true)])).toEqual([]);
  });

  it('from the calc graph: a v3 * HostEndpoint selected by a GlobalNetworkPolicy opening one port; deleted, the host is open again', async () => {
    const hepV3: V3Resource = { apiVersion: 'projectcalico.org/v3', kind: 'HostEndpoint', metadata: { name: 'node-1-all', labels: { role: 'node' } }, spec: { node: NODE, interfaceName: '*' } } as V3Resource;
    const gnp = globalNetworkPolicy('host-8080', {
      selector: "role == 'node'",
      types: ['Ingress'],
      // One rule per family: Calico refuses nets of both families in one rule.
      ingress: EXT_NETS.map((net) => ({ action: 'Allow' as const, protocol: 'TCP', source: { nets: [net] }, destination: { ports: [8080] } })),
    });
    await h.update([
      { op: 'upsert', resource: gnp },
      { op: 'upsert', resource: hepV3 },
    ]);
    expect(await check([p('ext', 'host', 'tcp', 8080, true), p('ext', 'host', 'udp', 5353, false), p('host', 'ext', 'tcp', 8080, false), p('client', 'web', 'tcp', 8080, true)])).toEqual([]);
    await h.update([
      { op: 'delete', kind: 'HostEndpoint', name: 'node-1-all' },
      { op: 'delete', kind: 'GlobalNetworkPolicy', name: 'host-8080' },
    ]);
    expect(await check([p('ext', 'host', 'udp', 5353, true), p('host', 'ext', 'tcp', 8080, true)])).toEqual([]);
  });
});

function execIp(args: readonly string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
}
