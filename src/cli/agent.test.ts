import { describe, expect, it } from 'vitest';

import { parseAgentArgs } from './agent.ts';

describe('tessera agent arguments', () => {
  it('takes the node from --node, else $NODE_NAME (the DaemonSet sets it from the downward API)', () => {
    expect(parseAgentArgs(['--node', 'n1'], {})).toMatchObject({ node: 'n1', metricsPort: 9095, netns: undefined });
    expect(parseAgentArgs(['--metrics-port=9095'], { NODE_NAME: 'n2' })).toMatchObject({ node: 'n2', metricsPort: 9095 });
    expect(parseAgentArgs(['--node=n1', '--netns', 'tse-1-n0', '--iptables-refresh', '5'], {})).toMatchObject({ netns: 'tse-1-n0', iptablesRefreshSeconds: 5 });
  });

  it('refuses a missing node name, unknown options and bad numbers', () => {
    expect(() => parseAgentArgs([], {})).toThrow(/--node/);
    expect(parseAgentArgs(['--node', 'n1'], {})).toMatchObject({ dropLog: true, dropLogGroup: 100, dropLogRate: '10/second', dropLogBurst: 5, deniedFlows: true });
    expect(parseAgentArgs(['--node', 'n1', '--drop-log', 'off', '--denied-flows=off', '--drop-log-rate', '5/minute', '--drop-log-burst', '20', '--drop-log-group', '7'], {})).toMatchObject({ dropLog: false, deniedFlows: false, dropLogRate: '5/minute', dropLogBurst: 20, dropLogGroup: 7 });
    expect(() => parseAgentArgs(['--node', 'n1', '--drop-log-rate', '10/sec'], {})).toThrow(/N\/second/);
    expect(() => parseAgentArgs(['--node', 'n1', '--drop-log', 'yes'], {})).toThrow(/on or off/);
    expect(() => parseAgentArgs(['--node', 'n', '--bogus'], {})).toThrow(/unknown option/);
    expect(() => parseAgentArgs(['--node', 'n', '--metrics-port', '-1'], {})).toThrow(/integer/);
    expect(parseAgentArgs(['--help'], {})).toBe('help');
  });

  it('--ip-versions (absent: detected at start) and --interface-prefix (a comma-separated list, Felix InterfacePrefix)', () => {
    expect(parseAgentArgs(['--node', 'n'], {})).toMatchObject({ ipVersions: undefined, interfacePrefixes: undefined });
    expect(parseAgentArgs(['--node', 'n', '--ip-versions', '6,4', '--interface-prefix=cali,veth'], {})).toMatchObject({ ipVersions: [4, 6], interfacePrefixes: ['cali', 'veth'] });
    expect(parseAgentArgs(['--node', 'n', '--ip-versions=6'], {})).toMatchObject({ ipVersions: [6] });
    expect(() => parseAgentArgs(['--node', 'n', '--ip-versions', '4,5'], {})).toThrow(/--ip-versions: .*not "5"/);
    expect(() => parseAgentArgs(['--node', 'n', '--interface-prefix', 'cali,'], {})).toThrow(/--interface-prefix "cali,": "" is not an interface name prefix/);
    expect(() => parseAgentArgs(['--node', 'n', '--interface-prefix', 'veth+'], {})).toThrow(/"veth\+" is not an interface name prefix/);
    expect(() => parseAgentArgs(['--node', 'n', '--interface-prefix', 'abcdefghijklmno'], {})).toThrow(/not an interface name prefix/);
  });

  it("--failsafe-inbound/outbound-host-ports (Felix's syntax; Felix's lists plus Tessera's health ports and the kubelet's inbound) and --default-endpoint-to-host-action (Felix's DROP)", () => {
    const defaults = parseAgentArgs(['--node', 'n'], {});
    expect(defaults).toMatchObject({ endpointToHostAction: 'DROP' });
    if (defaults === 'help') throw new Error('unreachable');
    expect(defaults.failsafeInbound.map((p) => `${p.protocol}:${p.port}`).join(',')).toBe('tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667,tcp:9093,tcp:9094,tcp:9095,tcp:10250');
    expect(defaults.failsafeOutbound.map((p) => `${p.protocol}:${p.port}`).join(',')).toBe('udp:53,udp:67,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667');
    expect(parseAgentArgs(['--node', 'n', '--failsafe-inbound-host-ports', 'tcp:22,tcp:[fd00::/64]:10250', '--failsafe-outbound-host-ports=none', '--default-endpoint-to-host-action', 'accept'], {})).toMatchObject({
      failsafeInbound: [
        { protocol: 'tcp', port: 22 },
        { protocol: 'tcp', port: 10250, net: 'fd00::/64' },
      ],
      failsafeOutbound: [],
      endpointToHostAction: 'ACCEPT',
    });
    expect(() => parseAgentArgs(['--node', 'n', '--failsafe-inbound-host-ports', 'icmp:8'], {})).toThrow(/--failsafe-inbound-host-ports: .*unknown protocol: icmp/);
    expect(() => parseAgentArgs(['--node', 'n', '--default-endpoint-to-host-action', 'reject'], {})).toThrow(/--default-endpoint-to-host-action/);
  });

  it('--typha (a host:port list) or --typha-service <ns/name>, with all three TLS files or none', () => {
    expect(parseAgentArgs(['--node', 'n'], {})).toMatchObject({ typha: undefined, typhaService: undefined });
    expect(parseAgentArgs(['--node', 'n', '--typha', '10.0.0.1:5473,[fd00::1]:5473'], {})).toMatchObject({ typha: ['10.0.0.1:5473', '[fd00::1]:5473'] });
    expect(parseAgentArgs(['--node', 'n', '--typha-service', 'tessera-system/tessera-typha'], {})).toMatchObject({ typhaService: { namespace: 'tessera-system', name: 'tessera-typha' } });
    const tls = ['--typha-ca-file', 'ca.pem', '--typha-cert-file', 'c.pem', '--typha-key-file', 'k.pem', '--typha-server-name', 'typha'];
    expect(parseAgentArgs(['--node', 'n', '--typha', 't:5473', ...tls], {})).toMatchObject({ typhaTls: { caFile: 'ca.pem', certFile: 'c.pem', keyFile: 'k.pem', serverName: 'typha' } });
    expect(() => parseAgentArgs(['--node', 'n', '--typha', '10.0.0.1'], {})).toThrow(/--typha "10.0.0.1": .*host:port/);
    expect(() => parseAgentArgs(['--node', 'n', '--typha-service', 'tessera-typha'], {})).toThrow(/<namespace>\/<name>/);
    expect(() => parseAgentArgs(['--node', 'n', '--typha', 't:1', '--typha-service', 'a/b'], {})).toThrow(/exclusive/);
    expect(() => parseAgentArgs(['--node', 'n', '--typha', 't:1', '--typha-ca-file', 'ca.pem'], {})).toThrow(/go together/);
    expect(() => parseAgentArgs(['--node', 'n', ...tls], {})).toThrow(/need --typha/);
  });
});
