import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../runtime/clock.ts';
import { RejectedChains, failClosedRules } from './rejected-chains.ts';
import { actionText, matchText } from './rule-text.ts';

describe('failClosedRules', () => {
  it('stands in a DROP for policy, profile, endpoint, dispatch and workload-to-host chains, naming why', () => {
    for (const chain of ['cali-pi-np/shop/web', 'cali-po-gnp/x', 'cali-pri-kns.shop', 'cali-pro-kns.shop', 'cali-tw-cali1', 'cali-fw-cali1', 'cali-from-wl-dispatch', 'cali-to-wl-dispatch-1', 'cali-wl-to-host']) {
      expect(failClosedRules(chain)!.map((r) => ({ ...r, match: matchText(r.match), action: actionText(r.action) }))).toEqual([{ match: '', action: '-j DROP', comments: ['Tessera: iptables-restore rejected this chain, fail closed'] }]);
    }
    expect(failClosedRules('cali-pi-x', 7)![0]!.comments).toEqual(['Tessera: iptables-restore rejected rule 7 of this chain, fail closed']);
  });

  it('has none for the top-level chains, which carry host traffic', () => {
    for (const chain of ['cali-FORWARD', 'cali-INPUT', 'cali-OUTPUT', 'cali-tessera-owner']) expect(failClosedRules(chain)).toBeUndefined();
  });
});

describe('RejectedChains', () => {
  it('retries with exponential backoff from 1 s capped at 30 s, counting attempts per version', async () => {
    const clock = new FakeClock();
    const r = new RejectedChains({ clock });
    const v1 = {};
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const { rejection, news } = r.reject('cali-pi-a', 'rules', v1, { rule: 2, error: 'bad' });
      expect(news).toBe(i === 0);
      expect(rejection.attempts).toBe(i + 1);
      delays.push(rejection.retryAt - clock.now());
      expect(r.due()).toEqual([]);
      await clock.advance(rejection.retryAt - clock.now());
      expect(r.due()).toEqual(['cali-pi-a']);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('a new version is news and starts over; retryNow makes it due at once', () => {
    const clock = new FakeClock();
    const r = new RejectedChains({ clock, initialRetryMs: 100, maxRetryMs: 400 });
    r.reject('cali-pi-a', 'rules', { v: 1 }, { rule: undefined, error: 'bad' });
    r.reject('cali-pi-a', 'rules', r.get('cali-pi-a')!.version, { rule: undefined, error: 'bad' });
    expect(r.nextRetryAt()).toBe(200);
    r.retryNow('cali-pi-a');
    expect(r.due()).toEqual(['cali-pi-a']);
    const { rejection, news } = r.reject('cali-pi-a', 'rules', { v: 2 }, { rule: 1, error: 'worse' });
    expect(news).toBe(true);
    expect(rejection).toMatchObject({ attempts: 1, retryAt: 100, rule: 1, error: 'worse' });
    expect(r.size).toBe(1);
    expect(r.delete('cali-pi-a')).toBe(true);
    expect(r.nextRetryAt()).toBe(Infinity);
  });

  it('rejects bad options with a RangeError naming them', () => {
    expect(() => new RejectedChains({ clock: new FakeClock(), initialRetryMs: 0 })).toThrow(/initialRetryMs/);
    expect(() => new RejectedChains({ clock: new FakeClock(), initialRetryMs: 10, maxRetryMs: 5 })).toThrow(/maxRetryMs/);
  });
});
