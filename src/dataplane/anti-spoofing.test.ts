import { describe, expect, it } from 'vitest';
import { MARK_FROM_WORKLOAD, rawChains, rawKernelHooks } from './anti-spoofing.ts';
import { RuleRenderError } from './match-builder.ts';
import { ruleTail } from './iptables/rule-text.ts';
import { RuleRenderer } from './rule-renderer.ts';
import type { Chain } from './chain.ts';

/** Each chain as `name: rule tails`, the text iptables-restore gets after the hash comment. */
const text = (chains: readonly Chain[]): Record<string, string[]> => Object.fromEntries(chains.map((c) => [c.name, c.rules.map(ruleTail)]));

const DROP_SPOOFED =
  '-m comment --comment "Drop packets from workloads whose source address is not routed back to them" -m mark --mark 0x40000/0x40000 -m rpfilter --invert --validmark -j DROP';
/** Felix's tail of raw PREROUTING: untracked host endpoint policy for everything else. */
const HOST_TAIL = ['-m mark --mark 0x0/0x40000 -j cali-from-host-endpoint', '-m mark --mark 0x10000/0x10000 -j ACCEPT'];

describe('anti-spoofing (raw table)', () => {
  it("cali-PREROUTING: clear Calico's marks, mark packets from workload interfaces, cali-rpf-skip, then DROP what fails the strict RPF check, then host endpoint untracked policy for the rest; cali-rpf-skip empty (golden)", () => {
    expect(MARK_FROM_WORKLOAD).toBe(0x40000);
    for (const v of [4, 6] as const) {
      const chains = text(new RuleRenderer({ ipVersion: v }).rawChains());
      expect({ skip: chains['cali-rpf-skip'], prerouting: chains['cali-PREROUTING'] }).toEqual({
        skip: [],
        prerouting: [
          '-j MARK --set-xmark 0x0/0xf0000',
          '-i cali+ -j MARK --set-xmark 0x40000/0x40000',
          '-m mark --mark 0x40000/0x40000 -j cali-rpf-skip',
          DROP_SPOOFED,
          ...HOST_TAIL,
        ],
      });
    }
  });

  it('marks every workload interface prefix (--interface-prefix), as the filter hooks match them', () => {
    const r = new RuleRenderer({ ipVersion: 4, interfacePrefixes: ['cali', 'veth'] });
    expect(text(r.rawChains())['cali-PREROUTING']).toEqual([
      '-j MARK --set-xmark 0x0/0xf0000',
      '-i cali+ -j MARK --set-xmark 0x40000/0x40000',
      '-i veth+ -j MARK --set-xmark 0x40000/0x40000',
      '-m mark --mark 0x40000/0x40000 -j cali-rpf-skip',
      DROP_SPOOFED,
      ...HOST_TAIL,
    ]);
    // Every interface whose traffic policy judges is one whose source is checked.
    for (const iface of ['cali1234', 'veth9']) expect(r.coversInterface(iface)).toBe(true);
  });

  it('the hook: PREROUTING jumps to cali-PREROUTING from the top', () => {
    expect(rawKernelHooks()).toEqual([{ chain: 'PREROUTING', inserts: [{ match: [], action: { type: 'jump', target: 'cali-PREROUTING' } }], appends: [] }]);
  });

  it("cali-rpf-skip: ACCEPT per exempt source prefix of the table's family, on its interface only", () => {
    const skips = [{ iface: 'cali0a', prefixes: ['10.70.0.0/16', 'fd00:70::/64', '10.71.0.9'] }];
    expect(text(rawChains(4, ['cali'], skips))['cali-rpf-skip']).toEqual(['-i cali0a --source 10.70.0.0/16 -j ACCEPT', '-i cali0a --source 10.71.0.9/32 -j ACCEPT']);
    expect(text(rawChains(6, ['cali'], skips))['cali-rpf-skip']).toEqual(['-i cali0a --source fd00:70::/64 -j ACCEPT']);
  });

  it('an exempt prefix that could inject restore text fails the render, not the restore', () => {
    expect(() => rawChains(4, ['cali'], [{ iface: 'cali0a -j ACCEPT', prefixes: ['10.0.0.0/8'] }])).toThrow(RuleRenderError);
    expect(() => rawChains(4, ['cali'], [{ iface: 'cali0a', prefixes: ['10.0.0.0/8 -j ACCEPT'] }])).toThrow(RuleRenderError);
  });
});
