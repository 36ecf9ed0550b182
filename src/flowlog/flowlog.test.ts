import { describe, expect, it } from 'vitest';
import { NflogPcapParser, LINKTYPE_NFLOG } from './nflog-pcap.ts';
import { parsePacket } from './packet-header.ts';
import { DeniedFlowLog, resolveFromTables, type DeniedFlow } from './denied-flow-log.ts';
import { DataplaneMetrics, IptablesTable, RecordingCommandRunner, RuleRenderer } from '../dataplane/index.ts';
import { newRegistry } from '../runtime/metrics.ts';
import { EndpointLookup } from './endpoint-lookup.ts';
import { FakeClock } from '../runtime/clock.ts';
import { silentLogger } from '../runtime/logger.ts';

/** An IPv4 UDP packet header (20 + 8 bytes). */
function udp4(src: string, dst: string, sport: number, dport: number): Buffer {
  const b = Buffer.alloc(28);
  b[0] = 0x45;
  b.writeUInt16BE(28, 2);
  b[8] = 64;
  b[9] = 17;
  src.split('.').forEach((o, i) => (b[12 + i] = Number(o)));
  dst.split('.').forEach((o, i) => (b[16 + i] = Number(o)));
  b.writeUInt16BE(sport, 20);
  b.writeUInt16BE(dport, 22);
  return b;
}

function tlv(type: number, value: Buffer): Buffer {
  const len = 4 + value.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  value.copy(out, 4);
  return out;
}

/** A pcap stream (little-endian, µs) of NFLOG records as tcpdump writes them. */
function pcap(records: Array<{ prefix: string; payload: Buffer; group?: number }>): Buffer {
  const head = Buffer.alloc(24);
  head.writeUInt32LE(0xa1b2c3d4, 0);
  head.writeUInt16LE(2, 4);
  head.writeUInt16LE(4, 6);
  head.writeUInt32LE(262144, 16);
  head.writeUInt32LE(LINKTYPE_NFLOG, 20);
  const parts = [head];
  records.forEach((r, i) => {
    const nfgen = Buffer.from([2, 0, 0, 0]);
    nfgen.writeUInt16BE(r.group ?? 100, 2);
    const body = Buffer.concat([nfgen, tlv(1, Buffer.from([0x08, 0x00, 0x01, 0x00])), tlv(10, Buffer.from(`${r.prefix}\0`, 'latin1')), tlv(9, r.payload)]);
    const rec = Buffer.alloc(16);
    rec.writeUInt32LE(1_700_000_000 + i, 0);
    rec.writeUInt32LE(250_000, 4);
    rec.writeUInt32LE(body.length, 8);
    rec.writeUInt32LE(body.length, 12);
    parts.push(rec, body);
  });
  return Buffer.concat(parts);
}

describe('NflogPcapParser', () => {
  it('reads prefix, group, time and payload of each record, whatever the chunking', () => {
    const stream = pcap([
      { prefix: 'cali-pi-np/shop/web|3', payload: udp4('10.65.0.3', '10.65.0.2', 40000, 5353) },
      { prefix: 'cali-tw-cali1|9', payload: udp4('10.65.0.4', '10.65.0.2', 40001, 53), group: 7 },
    ]);
    for (const size of [1, 3, 17, stream.length]) {
      const p = new NflogPcapParser();
      const out = [];
      for (let i = 0; i < stream.length; i += size) out.push(...p.push(stream.subarray(i, i + size)));
      expect(out.map((r) => [r.prefix, r.group, r.timeMs, r.payload.length])).toEqual([
        ['cali-pi-np/shop/web|3', 100, 1_700_000_000_250, 28],
        ['cali-tw-cali1|9', 7, 1_700_000_001_250, 28],
      ]);
    }
  });

  it('rejects a stream that is not pcap, and skips a record whose attributes overrun it', () => {
    expect(() => new NflogPcapParser().push(Buffer.alloc(24, 1))).toThrow(/not a pcap stream/);
    const stream = pcap([{ prefix: 'x|1', payload: udp4('10.0.0.1', '10.0.0.2', 1, 2) }]);
    stream.writeUInt16LE(200, 24 + 16 + 4 + 8); // the prefix attribute claims 200 bytes
    expect(new NflogPcapParser().push(stream)).toEqual([]);
  });
});

describe('parsePacket', () => {
  it('IPv4 UDP, IPv6 TCP behind a hop-by-hop header, ICMP, and a header cut short', () => {
    expect(parsePacket(udp4('10.65.0.3', '10.65.0.2', 40000, 5353))).toEqual({ ipVersion: 4, protocol: 'udp', srcIp: '10.65.0.3', dstIp: '10.65.0.2', srcPort: 40000, dstPort: 5353 });
    const v6 = Buffer.alloc(40 + 8 + 20);
    v6[0] = 0x60;
    v6[6] = 0; // hop-by-hop
    v6.write('fd000065000000000000000000000003', 8, 'hex');
    v6.write('fd000065000000000000000000000002', 24, 'hex');
    v6[40] = 6; // next: TCP
    v6[41] = 0; // 8 bytes
    v6.writeUInt16BE(51000, 48);
    v6.writeUInt16BE(8080, 50);
    expect(parsePacket(v6)).toEqual({ ipVersion: 6, protocol: 'tcp', srcIp: 'fd00:65::3', dstIp: 'fd00:65::2', srcPort: 51000, dstPort: 8080 });
    const icmp = udp4('10.0.0.1', '10.0.0.2', 0, 0);
    icmp[9] = 1;
    icmp[20] = 8;
    expect(parsePacket(icmp)).toMatchObject({ protocol: 'icmp', icmpType: 8, icmpCode: 0 });
    expect(parsePacket(udp4('10.0.0.1', '10.0.0.2', 1, 2).subarray(0, 22))).toEqual({ ipVersion: 4, protocol: 'udp', srcIp: '10.0.0.1', dstIp: '10.0.0.2' });
    expect(parsePacket(Buffer.from([0x45]))).toBeUndefined();
  });
});

describe('DeniedFlowLog.handle', () => {
  const attribution = { direction: 'ingress' as const, decision: 'rule' as const, tier: 'default', policy: { kind: 'NetworkPolicy', namespace: 'shop', name: 'knp.default.web' }, rule: 1, kubernetesNetworkPolicy: 'shop/web' };
  function setup(resolve = (): typeof attribution | undefined => attribution): { log: DeniedFlowLog; lines: DeniedFlow[]; clock: FakeClock } {
    const clock = new FakeClock(0);
    const endpoints = new EndpointLookup();
    endpoints.onUpdates([
      { op: 'upsert', resource: { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: { name: 'n1-k8s-web-eth0', namespace: 'shop' }, spec: { pod: 'web', node: 'n1', ipNetworks: ['10.65.0.2/32'] } } },
    ]);
    const lines: DeniedFlow[] = [];
    const log = new DeniedFlowLog({ nodeName: 'n1', resolve, endpoint: (ip) => endpoints.lookup(ip), sink: (l) => lines.push(l), clock, logger: silentLogger, dedupWindowMs: 10_000 });
    return { log, lines, clock };
  }
  const record = (sport: number, prefix = 'cali-pi-np/shop/knp.default.web|4') => ({ timeMs: 0, family: 2, group: 100, prefix, payload: udp4('10.65.0.3', '10.65.0.2', sport, 5353) });

  it('one line per flow within the window; the same flow again after it', async () => {
    const { log, lines, clock } = setup();
    log.handle(record(40000));
    log.handle(record(40000));
    log.handle(record(40001));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ ...attribution, nodeName: 'n1', protocol: 'udp', srcIp: '10.65.0.3', srcPort: 40000, dstPort: 5353, dst: { namespace: 'shop', pod: 'web' }, action: 'deny' });
    expect(lines[0]).not.toHaveProperty('src');
    await clock.advance(10_000);
    log.handle(record(40000));
    expect(lines).toHaveLength(3);
  });

  it('a prefix that resolves to no current rule, or a foreign prefix, is not logged', () => {
    const { log, lines } = setup(() => undefined);
    log.handle(record(1));
    log.handle(record(2, 'calico-packet'));
    expect(lines).toEqual([]);
  });
});

describe('resolveFromTables', () => {
  it("resolves a drop-log prefix against the family's filter table, also when the raw table (anti-spoofing, no drop-log rules) is listed first", () => {
    const renderer = new RuleRenderer({ ipVersion: 4, dropLog: {} });
    const metrics = new DataplaneMetrics(newRegistry());
    const table = (name: string): IptablesTable => new IptablesTable({ table: name, ipVersion: 4, runner: new RecordingCommandRunner(), clock: new FakeClock(0), logger: silentLogger, metrics });
    const raw = table('raw');
    raw.updateChains(renderer.rawChains());
    const filter = table('filter');
    const [toWorkload] = renderer.endpointChains('cali0a', { interfaceName: 'cali0a', state: 'active', mac: '', ipv4Nets: ['10.65.0.2/32'], ipv6Nets: [], profileIds: [], tiers: [] });
    filter.updateChain(toWorkload!);
    // The chain ends in the no-profile drop, right after its NFLOG rule.
    const log = toWorkload!.rules.at(-2)!.action;
    expect(log.type).toBe('nflog');
    const prefix = log.type === 'nflog' ? log.prefix : '';
    expect(resolveFromTables([raw, filter])(4, prefix)).toEqual({ direction: 'ingress', decision: 'no-profile-matched' });
    expect(resolveFromTables([raw])(4, prefix)).toBeUndefined();
  });
});

describe('EndpointLookup', () => {
  it('keys addresses as packets are written (RFC 5952), whatever the endpoint spelled; a re-addressed or deleted endpoint releases them', () => {
    const l = new EndpointLookup();
    const ep = (ips: string[]) => ({ op: 'upsert' as const, resource: { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: { name: 'w', namespace: 'shop' }, spec: { pod: 'web', ipNetworks: ips } } as never });
    l.onUpdates([ep(['10.65.0.2/32', 'FD00:0065:0:0::2/128'])]);
    expect(l.lookup('fd00:65::2')).toMatchObject({ namespace: 'shop', pod: 'web' });
    expect(l.lookup('10.65.0.2')).toMatchObject({ pod: 'web' });
    l.onUpdates([ep(['10.65.0.9/32'])]);
    expect(l.lookup('10.65.0.2')).toBeUndefined();
    expect(l.lookup('10.65.0.9')).toMatchObject({ pod: 'web' });
    l.onUpdates([{ op: 'delete', kind: 'WorkloadEndpoint', name: 'w', namespace: 'shop' }]);
    expect(l.size).toBe(0);
  });

  it('an address belongs to the endpoint that last claimed it; deleting the other keeps it; only the packet spelling is found', () => {
    const l = new EndpointLookup();
    const ep = (name: string, ips: string[], node?: string) => ({
      op: 'upsert' as const,
      resource: { apiVersion: 'projectcalico.org/v3', kind: 'WorkloadEndpoint', metadata: { name, namespace: 'shop' }, spec: { ipNetworks: ips, ...(node === undefined ? {} : { node }) } } as never,
    });
    l.onUpdates([ep('a', ['10.65.0.2/32']), ep('b', ['10.65.0.2/32', 'fd00::9/128'], 'n1')]);
    expect(l.lookup('10.65.0.2')).toEqual({ namespace: 'shop', pod: 'b', workloadEndpoint: 'b', node: 'n1' });
    l.onUpdates([{ op: 'delete', kind: 'WorkloadEndpoint', name: 'a', namespace: 'shop' }]);
    expect(l.lookup('10.65.0.2')).toMatchObject({ workloadEndpoint: 'b' });
    expect(l.lookup('fd00:0::9')).toBeUndefined();
    expect(l.lookup('fd00::9')).toMatchObject({ workloadEndpoint: 'b' });
    // The freed id is reused by the next endpoint, with its own names and no node.
    l.onUpdates([ep('c', ['10.65.0.3/32'])]);
    expect(l.lookup('10.65.0.3')).toEqual({ namespace: 'shop', pod: 'c', workloadEndpoint: 'c' });
    expect(l.size).toBe(3);
  });
});
