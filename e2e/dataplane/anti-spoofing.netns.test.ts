/**
 * Anti-spoofing on real IPv4 and IPv6 traffic (anti-spoofing.ts): a pod that sends with
 * another pod's source address is dropped in the raw table before policy could judge it as
 * that pod, while genuine traffic is judged as usual.
 *
 * The dual-stack node of the policy-states tests: web accepts anything from client and nothing
 * from other. `other` is given client's addresses as extra local addresses (what a privileged
 * container can do) and sends TCP SYNs and UDP datagrams from them to web. Proof, per family:
 * - genuine traffic: client → web allowed, other → web blocked (TCP and UDP probes);
 * - spoofed traffic: nothing from client's address reaches web's `eth0` (tcpdump in web's
 *   namespace), and the raw `cali-PREROUTING` DROP counter grows by at least what was sent;
 * - the control: with the raw PREROUTING hook taken out, the same spoofed packets DO reach web —
 *   policy admits them as client's — so the test would catch the check missing; with the hook
 *   put back they are dropped again;
 * - a source no pod owns is dropped too.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import { BACKEND, DUAL_STACK_PODS, Harness, matrix, networkPolicy } from './harness.ts';
import { HOST_VETH_LINK_LOCAL, HOST_VETH_MAC } from './netns.ts';
import { TCP_PORT, UDP_PORT, type IpFamily } from './probes.ts';
import type { Update } from '../../src/syncer/index.ts';

const pod = (name: string) => DUAL_STACK_PODS.find((p) => p.name === name)!;
const addr = (name: string, family: IpFamily): string => (family === 4 ? pod(name).ip : pod(name).ip6!);

/** web accepts everything from client, nothing from anyone else. */
const webFromClientOnly = networkPolicy('web-from-client', {
  selector: "app == 'web'",
  types: ['Ingress'],
  ingress: [{ action: 'Allow', source: { selector: "app == 'client'" } }],
});

const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));

/**
 * Sent inside a pod's namespace with node: `count` UDP datagrams and `count` TCP SYNs from
 * `src` (which must be a local address there) to `dst`.
 */
const SENDER = `
const [src, dst, udpPort, tcpPort, count] = process.argv.slice(1);
const dgram = require('node:dgram');
const net = require('node:net');
(async () => {
  for (let i = 0; i < Number(count); i++) {
    await new Promise((resolve, reject) => {
      const s = dgram.createSocket(net.isIPv6(dst) ? 'udp6' : 'udp4');
      s.on('error', reject);
      s.bind({ address: src }, () => s.send('spoofed', Number(udpPort), dst, (e) => { s.close(); e ? reject(e) : resolve(); }));
    });
    const c = net.connect({ host: dst, port: Number(tcpPort), localAddress: src });
    c.on('error', () => {});
    await new Promise((r) => setTimeout(r, 50));
    c.destroy();
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

describe('dataplane: anti-spoofing (raw cali-PREROUTING) on real IPv4 and IPv6 traffic', () => {
  let h: Harness;
  const node = (args: readonly string[]): string => h.topo.exec(h.topo.nodeNs, args);
  const tool = (family: IpFamily, suffix: string): string => `${family === 4 ? 'iptables' : 'ip6tables'}-${BACKEND}${suffix}`;

  /** Packets counted by the raw anti-spoofing DROP rule of `family`. */
  const spoofDrops = (family: IpFamily): number => {
    const line = node([tool(family, '-save'), '-c', '-t', 'raw'])
      .split('\n')
      .find((l) => / -A cali-PREROUTING .*-m rpfilter .*-j DROP$/.test(l));
    expect(line, `the raw anti-spoofing rule of IPv${family}`).toBeDefined();
    return Number(/^\[(\d+):/.exec(line!)![1]);
  };

  /** The raw PREROUTING hook as iptables-save prints it, without `-A PREROUTING `. */
  const hook = (family: IpFamily): string => {
    const line = node([tool(family, '-save'), '-t', 'raw'])
      .split('\n')
      .find((l) => l.startsWith('-A PREROUTING ') && l.endsWith('-j cali-PREROUTING'));
    expect(line, `the raw PREROUTING hook of IPv${family}`).toBeDefined();
    return line!.slice('-A PREROUTING '.length);
  };

  /**
   * Sends `count` spoofed UDP datagrams and TCP SYNs from `other` with source `src` to web,
   * and returns how many packets from `src` to web's probe ports web's `eth0` saw.
   */
  const sendFromOther = async (src: string, family: IpFamily, count = 3): Promise<number> => {
    const web = h.topo.pod('web');
    const filter = `src host ${src} and ((udp and dst port ${UDP_PORT}) or (tcp and dst port ${TCP_PORT}))`;
    const dump = spawn('ip', ['netns', 'exec', web.netns, 'tcpdump', '-i', 'eth0', '-nn', '-l', '-p', filter], { stdio: ['ignore', 'pipe', 'pipe'] });
    const seen: string[] = [];
    dump.stdout.setEncoding('utf8').on('data', (d: string) => seen.push(...d.split('\n').filter((l) => l !== '')));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('tcpdump did not start')), 10_000);
      dump.stderr.setEncoding('utf8').on('data', (d: string) => {
        if (d.includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      dump.on('exit', (code) => reject(new Error(`tcpdump exited with ${code}`)));
    });
    try {
      h.topo.exec(h.topo.pod('other').netns, [process.execPath, '-e', SENDER, src, addr('web', family), String(UDP_PORT), String(TCP_PORT), String(count)]);
      // tcpdump prints a packet as it sees it; leave time for the last SYN and any retransmission.
      await new Promise((r) => setTimeout(r, 1_000));
    } finally {
      const exited = new Promise((r) => dump.once('exit', r));
      dump.kill('SIGINT');
      await exited;
    }
    return seen.length;
  };

  beforeAll(async () => {
    h = await Harness.create({ ipVersions: [4, 6] }, DUAL_STACK_PODS);
    await h.update(upsert(...h.baseResources(), webFromClientOnly));
    // `other` may now send from client's addresses (and from one no pod owns).
    const other = h.topo.pod('other').netns;
    h.topo.exec(other, ['ip', 'addr', 'add', `${addr('client', 4)}/32`, 'dev', 'eth0']);
    h.topo.exec(other, ['ip', 'addr', 'add', '10.65.0.99/32', 'dev', 'eth0']);
    h.topo.exec(other, ['ip', '-6', 'addr', 'add', `${addr('client', 6)}/128`, 'dev', 'eth0', 'nodad']);
    h.topo.exec(other, ['ip', '-6', 'addr', 'add', 'fd00:65::99/128', 'dev', 'eth0', 'nodad']);
    // Its next hops are known for good: a neighbour solicitation sent from a spoofed address
    // is itself dropped by the check, and then no spoofed packet would even leave the pod —
    // the counts below are of the packets the pod sends, each dropped by the node.
    h.topo.exec(other, ['ip', 'neigh', 'replace', '169.254.1.1', 'lladdr', HOST_VETH_MAC, 'dev', 'eth0', 'nud', 'permanent']);
    h.topo.exec(other, ['ip', '-6', 'neigh', 'replace', HOST_VETH_LINK_LOCAL, 'lladdr', HOST_VETH_MAC, 'dev', 'eth0', 'nud', 'permanent']);
  }, 60_000);
  afterAll(async () => {
    await h?.dispose();
  });

  it('genuine traffic is judged as usual over both families: client → web allowed, other → web blocked', async () => {
    const blocked = ['other->web/tcp', 'other->web/udp'];
    expect(await h.check([...matrix(blocked, 4), ...matrix(blocked, 6)])).toEqual([]);
  });

  it.each([4, 6] as const)("IPv%i: other sending from client's address is dropped in raw PREROUTING and never reaches web", async (family) => {
    const before = spoofDrops(family);
    expect(await sendFromOther(addr('client', family), family)).toBe(0);
    // 3 datagrams and 3 SYNs at least (a SYN may be retransmitted).
    expect(spoofDrops(family) - before).toBeGreaterThanOrEqual(6);
  });

  it.each([4, 6] as const)('IPv%i: a source address no pod owns is dropped too', async (family) => {
    const before = spoofDrops(family);
    expect(await sendFromOther(family === 4 ? '10.65.0.99' : 'fd00:65::99', family)).toBe(0);
    expect(spoofDrops(family) - before).toBeGreaterThanOrEqual(6);
  });

  it.each([4, 6] as const)('IPv%i control: without the raw hook the spoofed packets reach web, admitted as client; with it back they are dropped', async (family) => {
    const rule = hook(family);
    const table = [tool(family, ''), '-t', 'raw'];
    node([...table, '-D', 'PREROUTING', ...splitRule(rule)]);
    try {
      expect(await sendFromOther(addr('client', family), family)).toBeGreaterThanOrEqual(6);
    } finally {
      node([...table, '-I', 'PREROUTING', '1', ...splitRule(rule)]);
    }
    expect(hook(family)).toBe(rule);
    expect(await sendFromOther(addr('client', family), family)).toBe(0);
    // Genuine traffic is unaffected by the exercise.
    expect(await h.check(matrix(['other->web/tcp', 'other->web/udp'], family))).toEqual([]);
  });
});

/** An iptables-save rule as arguments (its comment `"cali:…"` unquoted). */
function splitRule(rule: string): string[] {
  return rule.split(' ').map((t) => t.replace(/^"(.*)"$/, '$1'));
}
