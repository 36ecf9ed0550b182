import { describe, expect, it } from 'vitest';
import type { Chain } from './chain.ts';
import { ruleBody } from './iptables/rule-text.ts';
import { MatchBuilder, RuleRenderError } from './match-builder.ts';
import { unenforcedQoSFields } from './qos-controls.ts';
import { RuleRenderer } from './rule-renderer.ts';
import { endpoint } from '../../test/dataplane/fixtures.ts';

const v4 = new RuleRenderer({ ipVersion: 4 });
const chainText = (c: Chain): string[] => c.rules.map((r) => `-A ${c.name} ${ruleBody(r, '').trim()}`);

// The expected text is Felix's rendering (felix/rules/endpoints.go, iptables/actions.go
// `LimitPacketRateAction`, `LimitNumConnectionsAction`) in Tessera's spelling: `--set-xmark b/b`
// for Felix's `--set-mark b/b` and `-m mark --mark 0x0/b` for its `-m mark ! --mark b/b`, the
// same kernel operations.
describe('QoS controls in the endpoint chains (Felix endpointIptablesChain)', () => {
  it('renders the ingress packet rate before conntrack and the connection limit right after it, in cali-tw- only', () => {
    const ep = endpoint({ profileIds: ['kns.shop'], qosControls: { ingressPacketRate: 100, ingressPacketBurst: 20, ingressMaxConnections: 10 } });
    const [tw, fw] = v4.endpointChains('cali0a', ep);
    expect(chainText(tw!).slice(0, 8)).toEqual([
      '-A cali-tw-cali0a -m comment --comment "Clear ingress packet rate limit mark" -j MARK --set-xmark 0x0/0x40000',
      '-A cali-tw-cali0a -m comment --comment "Mark packets within ingress packet rate limit" -m limit --limit 100/sec --limit-burst 20 -j MARK --set-xmark 0x40000/0x40000',
      '-A cali-tw-cali0a -m comment --comment "Drop packets over ingress packet rate limit" -m mark --mark 0x0/0x40000 -j DROP',
      '-A cali-tw-cali0a -m comment --comment "Clear ingress packet rate limit mark" -j MARK --set-xmark 0x0/0x40000',
      '-A cali-tw-cali0a -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A cali-tw-cali0a -m conntrack --ctstate INVALID -j DROP',
      '-A cali-tw-cali0a -m comment --comment "Reject connections over ingress connection limit" -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connlimit --connlimit-above 10 --connlimit-mask 0 -j REJECT --reject-with tcp-reset',
      '-A cali-tw-cali0a -j MARK --set-xmark 0x0/0x30000',
    ]);
    expect(chainText(fw!).slice(0, 3)).toEqual([
      '-A cali-fw-cali0a -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A cali-fw-cali0a -m conntrack --ctstate INVALID -j DROP',
      '-A cali-fw-cali0a -j MARK --set-xmark 0x0/0x30000',
    ]);
  });

  it('renders the egress limits in cali-fw-, a rate without a burst with burst 5', () => {
    const ep = endpoint({ qosControls: { egressPacketRate: 7, egressMaxConnections: 1 } });
    const [tw, fw] = v4.endpointChains('cali0a', ep);
    expect(chainText(tw!)[0]).toBe('-A cali-tw-cali0a -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT');
    expect(chainText(fw!).slice(0, 7)).toEqual([
      '-A cali-fw-cali0a -m comment --comment "Clear egress packet rate limit mark" -j MARK --set-xmark 0x0/0x40000',
      '-A cali-fw-cali0a -m comment --comment "Mark packets within egress packet rate limit" -m limit --limit 7/sec --limit-burst 5 -j MARK --set-xmark 0x40000/0x40000',
      '-A cali-fw-cali0a -m comment --comment "Drop packets over egress packet rate limit" -m mark --mark 0x0/0x40000 -j DROP',
      '-A cali-fw-cali0a -m comment --comment "Clear egress packet rate limit mark" -j MARK --set-xmark 0x0/0x40000',
      '-A cali-fw-cali0a -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
      '-A cali-fw-cali0a -m conntrack --ctstate INVALID -j DROP',
      '-A cali-fw-cali0a -m comment --comment "Reject connections over egress connection limit" -p tcp -m tcp --tcp-flags FIN,SYN,RST,ACK SYN -m connlimit --connlimit-above 1 --connlimit-mask 0 -j REJECT --reject-with tcp-reset',
    ]);
  });

  it('adds nothing for bandwidth fields alone (they need tc), and names them as not enforced', () => {
    const qos = { ingressBandwidth: 1_000_000, ingressBurst: 4294967296, egressPeakrate: 2_000_000, egressPacketRate: 0 };
    const withQos = v4.endpointChains('cali0a', endpoint({ qosControls: qos }));
    const without = v4.endpointChains('cali0a', endpoint());
    expect(withQos.map(chainText)).toEqual(without.map(chainText));
    expect(unenforcedQoSFields(qos)).toEqual(['ingressBandwidth', 'ingressBurst', 'egressPeakrate']);
    expect(unenforcedQoSFields(undefined)).toEqual([]);
    expect(unenforcedQoSFields({ ingressMaxConnections: 3, dscp: 'EF' })).toEqual(['dscp']);
  });

  it('clamps a rate, burst or connection limit the kernel cannot take (Felix panics on them; refusing would drop the endpoint), and a negative one is no limit', () => {
    const body = (q: object, dir: 0 | 1): string[] => chainText(v4.endpointChains('cali0a', endpoint({ qosControls: q }))[dir]!);
    expect(body({ ingressPacketRate: 10001 }, 0)[1]).toContain('-m limit --limit 10000/sec --limit-burst 5 ');
    expect(body({ egressPacketRate: 5, egressPacketBurst: 10001 }, 1)[1]).toContain('-m limit --limit 5/sec --limit-burst 10000 ');
    expect(body({ ingressMaxConnections: 2 ** 32 }, 0)[2]).toContain('--connlimit-above 4294967295 ');
    expect(body({ ingressPacketRate: -3, ingressMaxConnections: -1 }, 0)).toEqual(body({}, 0));
    expect(() => new MatchBuilder().packetRate(10001, 5)).toThrow(RuleRenderError);
  });

  it('gives an admin-down endpoint only its DROP, whatever its limits', () => {
    const [tw] = v4.endpointChains('cali0a', endpoint({ state: 'inactive', qosControls: { ingressPacketRate: 5, ingressMaxConnections: 1 } }));
    expect(chainText(tw!)).toEqual(['-A cali-tw-cali0a -m comment --comment "Endpoint admin disabled" -j DROP']);
  });
});
