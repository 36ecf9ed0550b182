import { describe, expect, it } from 'vitest';
import type { Chain } from './chain.ts';
import { DEFAULT_FAILSAFES, DEFAULT_FAILSAFE_INBOUND, DEFAULT_FAILSAFE_OUTBOUND, FELIX_FAILSAFE_INBOUND, FELIX_FAILSAFE_OUTBOUND, FailsafePortsError, failsafeChains, parseFailsafePorts } from './failsafes.ts';
import { ruleTail } from './iptables/rule-text.ts';

const byName = (chains: readonly Chain[]): Record<string, string[]> => Object.fromEntries(chains.map((c) => [c.name, c.rules.map(ruleTail)]));
const dport = (proto: string, port: number, extra = ''): string => `-p ${proto} -m multiport --destination-ports ${port}${extra} -j ACCEPT`;
const sport = (proto: string, port: number, extra = ''): string => `-p ${proto} -m multiport --source-ports ${port}${extra} -j ACCEPT`;

describe('failsafe ports', () => {
  it("Felix's defaults, entry for entry (config_params.go); Tessera's add its pods' health ports and the kubelet's inbound", () => {
    const fmt = (l: typeof DEFAULT_FAILSAFE_INBOUND): string => l.map((p) => `${p.protocol}:${p.port}`).join(',');
    expect(fmt(FELIX_FAILSAFE_INBOUND)).toBe('tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667');
    expect(fmt(FELIX_FAILSAFE_OUTBOUND)).toBe('udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667');
    expect(fmt(DEFAULT_FAILSAFE_INBOUND)).toBe('tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667,tcp:9093,tcp:9094,tcp:9095,tcp:10250');
    expect(DEFAULT_FAILSAFE_OUTBOUND).toBe(FELIX_FAILSAFE_OUTBOUND);
  });

  it("parses Felix's syntax: <port>, <proto>:<port>, <proto>:<cidr>:<port>, an IPv6 CIDR in brackets; none is empty", () => {
    expect(parseFailsafePorts('22, udp:68,TCP:10.0.0.0/8:6443,tcp:[fd00::/64]:5473,,udp:1.2.3.4:53')).toEqual([
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', port: 68 },
      { protocol: 'tcp', port: 6443, net: '10.0.0.0/8' },
      { protocol: 'tcp', port: 5473, net: 'fd00::/64' },
      { protocol: 'udp', port: 53, net: '1.2.3.4/32' },
    ]);
    expect(parseFailsafePorts('none')).toEqual([]);
    expect(parseFailsafePorts('')).toEqual([]);
  });

  it('rejects what Felix rejects, naming the entry', () => {
    for (const bad of ['sctp:22', 'tcp:http', 'tcp:65536', 'a:b:c:d', 'tcp:10.0.0.300:22', '-1']) {
      expect(() => parseFailsafePorts(`22,${bad}`)).toThrow(FailsafePortsError);
    }
    expect(() => parseFailsafePorts('tcp:65536')).toThrow("failsafe ports 'tcp:65536': entry 'tcp:65536': ports must be in range 0-65535");
  });

  it('filter and mangle: inbound as --dport [-s net], outbound as --dport [-d net]; nets of the other family left out', () => {
    const cfg = { inbound: parseFailsafePorts('tcp:22,tcp:10.0.0.0/8:6443,tcp:[fd00::/64]:5473'), outbound: parseFailsafePorts('udp:53,udp:10.0.0.10:67') };
    expect(byName(failsafeChains('filter', 4, cfg))).toEqual({
      'cali-failsafe-in': [dport('tcp', 22), '-p tcp -m multiport --destination-ports 6443 --source 10.0.0.0/8 -j ACCEPT'],
      'cali-failsafe-out': [dport('udp', 53), '-p udp -m multiport --destination-ports 67 --destination 10.0.0.10/32 -j ACCEPT'],
    });
    expect(byName(failsafeChains('mangle', 6, cfg))).toEqual({
      'cali-failsafe-in': [dport('tcp', 22), '-p tcp -m multiport --destination-ports 5473 --source fd00::/64 -j ACCEPT'],
      'cali-failsafe-out': [dport('udp', 53)],
    });
  });

  it('raw adds the reverse entries (replies), so doNotTrack policy never catches half a failsafe connection', () => {
    const cfg = { inbound: parseFailsafePorts('tcp:22'), outbound: parseFailsafePorts('udp:53,tcp:10.0.0.1:6443') };
    expect(byName(failsafeChains('raw', 4, cfg))).toEqual({
      'cali-failsafe-in': [dport('tcp', 22), sport('udp', 53), '-p tcp -m multiport --source-ports 6443 --source 10.0.0.1/32 -j ACCEPT'],
      'cali-failsafe-out': [dport('udp', 53), '-p tcp -m multiport --destination-ports 6443 --destination 10.0.0.1/32 -j ACCEPT', sport('tcp', 22)],
    });
  });

  it("the default filter chains: SSH, DHCP, BGP, etcd, Typha and the API server, Tessera's pods' health ports and the kubelet (10250); not a NodePort", () => {
    const chains = byName(failsafeChains('filter', 4, DEFAULT_FAILSAFES));
    expect(chains['cali-failsafe-in']).toHaveLength(13);
    for (const port of [22, 6443, 9093, 9094, 9095, 10250]) expect(chains['cali-failsafe-in']).toContain(dport('tcp', port));
    expect(chains['cali-failsafe-in']!.some((r) => r.includes('30080'))).toBe(false);
    expect(byName(failsafeChains('filter', 4, { inbound: FELIX_FAILSAFE_INBOUND, outbound: FELIX_FAILSAFE_OUTBOUND }))['cali-failsafe-in']!.some((r) => r.includes('10250'))).toBe(false);
  });
});
