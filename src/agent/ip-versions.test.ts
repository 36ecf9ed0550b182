import { describe, expect, it } from 'vitest';

import { RecordingCommandRunner } from '../dataplane/index.ts';
import { detectIpVersions, parseIpVersions } from './ip-versions.ts';

/** `ip -j addr show scope global` as iproute2 prints it (trimmed to the fields read). */
const link = (ifname: string, ...addrs: Array<[family: 'inet' | 'inet6', local: string, prefixlen: number]>) => ({
  ifindex: 1,
  ifname,
  addr_info: addrs.map(([family, local, prefixlen]) => ({ family, local, prefixlen, scope: 'global' })),
});
const answering = (stdout: unknown, code = 0, stderr = '') => new RecordingCommandRunner(() => ({ code, stdout: JSON.stringify(stdout), stderr }));

describe('parseIpVersions', () => {
  it('reads 4, 6 and 4,6 in any order, sorted and without duplicates', () => {
    expect(parseIpVersions('4')).toEqual([4]);
    expect(parseIpVersions('6')).toEqual([6]);
    expect(parseIpVersions('6,4')).toEqual([4, 6]);
    expect(parseIpVersions('4, 6,4')).toEqual([4, 6]);
  });

  it('names the bad part', () => {
    expect(() => parseIpVersions('4,5')).toThrow(/"4,5": each must be 4 or 6, not "5"/);
    expect(() => parseIpVersions('')).toThrow(RangeError);
    expect(() => parseIpVersions('ipv6')).toThrow(/not "ipv6"/);
  });
});

describe('detectIpVersions', () => {
  it("asks for the node's global-scope addresses through the runner (so --netns reads the namespace)", async () => {
    const runner = answering([]);
    await detectIpVersions(runner);
    expect(runner.calls.map((c) => [c.cmd, ...c.args])).toEqual([['ip', '-j', 'addr', 'show', 'scope', 'global']]);
  });

  it('an IPv4-only node: 4', async () => {
    const got = await detectIpVersions(answering([link('eth0', ['inet', '10.0.0.7', 24]), link('lo'), link('cali123')]));
    expect(got).toEqual({ ipVersions: [4], source: 'detected', addresses: ['10.0.0.7/24 eth0'] });
  });

  it('a dual-stack node: 4 and 6, whichever interface holds them', async () => {
    const got = await detectIpVersions(answering([link('eth0', ['inet', '10.0.0.7', 24]), link('lo', ['inet6', 'fd00:ff::1', 128])]));
    expect(got.ipVersions).toEqual([4, 6]);
    expect(got.addresses).toEqual(['10.0.0.7/24 eth0', 'fd00:ff::1/128 lo']);
  });

  it('an IPv6-only node: 6', async () => {
    expect((await detectIpVersions(answering([link('eth0', ['inet6', '2001:db8::7', 64])]))).ipVersions).toEqual([6]);
  });

  it('ignores link-local and host-scope addresses an older ip might print', async () => {
    const out = [{ ifname: 'eth0', addr_info: [{ family: 'inet', local: '10.0.0.7', prefixlen: 24, scope: 'global' }, { family: 'inet6', local: 'fe80::1', prefixlen: 64, scope: 'link' }] }];
    expect((await detectIpVersions(answering(out))).ipVersions).toEqual([4]);
  });

  it('falls back to IPv4 and says why when ip fails, prints garbage, or finds no global address', async () => {
    expect(await detectIpVersions(new RecordingCommandRunner(() => ({ code: 127, stdout: '', stderr: 'Error: spawn ip ENOENT' })))).toEqual({
      ipVersions: [4],
      source: 'fallback',
      reason: 'ip -j addr show scope global failed (exit 127): Error: spawn ip ENOENT',
    });
    expect(await detectIpVersions(new RecordingCommandRunner(() => ({ code: 0, stdout: 'not json', stderr: '' })))).toMatchObject({ ipVersions: [4], source: 'fallback', reason: expect.stringMatching(/unparseable/) });
    expect(await detectIpVersions(answering([link('lo')]))).toEqual({ ipVersions: [4], source: 'fallback', reason: 'the node has no global-scope address' });
  });
});
