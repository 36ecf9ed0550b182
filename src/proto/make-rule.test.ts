import { describe, expect, it } from 'vitest';
import { makeRule } from './index.ts';

describe('makeRule', () => {
  it('gives every rule the same fields in the same order, whatever it was built from', () => {
    const a = makeRule({ action: 'allow' });
    const b = makeRule({ action: 'deny', protocol: 'tcp', icmp: { type: 8 }, dstPorts: [{ first: 80, last: 80 }], ruleId: 'r1' });
    expect(Object.keys(a)).toEqual(Object.keys(b));
    expect(a).toEqual({ ...a, protocol: undefined, srcNets: [], ruleId: '' });
  });

  it('serialises like the object it was built from (absent fields stay absent in JSON)', () => {
    const init = { action: 'deny' as const, protocol: 'udp', srcNets: ['10.0.0.0/8'] };
    const json = JSON.parse(JSON.stringify(makeRule(init))) as Record<string, unknown>;
    expect(json).not.toHaveProperty('ipVersion');
    expect(json).toMatchObject(init);
    expect(json['ruleId']).toBe('');
  });
});
