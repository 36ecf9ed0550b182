import { describe, expect, it } from 'vitest';
import { actionText } from './iptables/rule-text.ts';
import { contestedInterfaceChains, findClaimConflicts, type EndpointClaim } from './endpoint-conflicts.ts';

const claim = (key: string, iface: string | undefined, ...nets: string[]): EndpointClaim => {
  const [namespace, name] = key.split('/') as [string, string];
  return { key, namespace, name, iface, nets };
};

describe('findClaimConflicts', () => {
  it('finds nothing when every interface and address has one claimant', () => {
    expect(findClaimConflicts([claim('shop/a', 'cali1', '10.65.0.1/32'), claim('shop/b', 'cali2', '10.65.0.2/32', 'fd00::2/128')])).toEqual([]);
  });

  it('reports one interface claimed by two endpoints, whatever their order', () => {
    const want = [{ kind: 'interface', claim: 'calib', endpoints: ['aaa/attacker', 'shop/b'] }];
    expect(findClaimConflicts([claim('shop/b', 'calib', '10.65.0.2/32'), claim('aaa/attacker', 'calib', '10.65.0.9/32')])).toEqual(want);
    expect(findClaimConflicts([claim('aaa/attacker', 'calib', '10.65.0.9/32'), claim('shop/b', 'calib', '10.65.0.2/32')])).toEqual(want);
  });

  it('reports an address claimed twice, in either spelling, and an unresolved interface does not hide it', () => {
    expect(findClaimConflicts([claim('shop/b', 'calib', '10.65.0.2/32'), claim('zzz/x', undefined, '10.65.0.2')])).toEqual([
      { kind: 'address', claim: '10.65.0.2/32', endpoints: ['shop/b', 'zzz/x'] },
    ]);
    expect(findClaimConflicts([claim('shop/b', 'calib', 'fd00::2/128'), claim('zzz/x', 'calix', 'fd00:0:0::2/128')])).toHaveLength(1);
  });

  it('reports a wider network that covers another endpoint address', () => {
    expect(findClaimConflicts([claim('shop/b', 'calib', '10.65.0.2/32'), claim('zzz/x', 'calix', '10.65.0.0/24'), claim('shop/c', 'calic', '10.66.0.2/32')])).toEqual([
      { kind: 'address', claim: '10.65.0.0/24', endpoints: ['shop/b', 'zzz/x'] },
    ]);
  });

  it('reports both kinds when the same pair claims interface and address', () => {
    expect(findClaimConflicts([claim('shop/b', 'calib', '10.65.0.2/32'), claim('a/x', 'calib', '10.65.0.2/32')]).map((c) => c.kind)).toEqual(['address', 'interface']);
  });
});

describe('contestedInterfaceChains', () => {
  it('is a single DROP in each direction of the interface', () => {
    expect(contestedInterfaceChains('calib').map((c) => [c.name, c.rules.map((r) => actionText(r.action))])).toEqual([
      ['cali-tw-calib', ['-j DROP']],
      ['cali-fw-calib', ['-j DROP']],
    ]);
  });
});
