/**
 * `IPSetMemberIndex` with the compact per-endpoint data: one net held as itself, several (IPv4
 * then IPv6) as an array, and re-addressing between the two forms.
 */
import { describe, expect, it } from 'vitest';

import { parseSelector } from '../selector/index.ts';
import { namedPortIPSet, selectorIPSet } from './ipset-data.ts';
import { IPSetMemberIndex } from './ipset-member-index.ts';
import type { ModelEndpoint } from './model.ts';

const ep = (key: string, ipv4Nets: string[], ipv6Nets: string[], port?: number): ModelEndpoint => ({
  key,
  endpointType: 'workload',
  namespace: 'ns',
  name: key,
  node: 'n1',
  labels: { app: 'web' },
  profileIds: [],
  ipv4Nets,
  ipv6Nets,
  ports: port === undefined ? [] : [{ name: 'http', protocol: 'tcp', port }],
  interfaceName: 'cali0',
  mac: '',
});

describe('IPSetMemberIndex: compact endpoint data', () => {
  it('gives every net of an endpoint, v4 then v6, to selector and named-port sets through re-addressing', () => {
    const events: string[] = [];
    const idx = new IPSetMemberIndex({ onMemberAdded: (s, m) => events.push(`+${s === 'np' ? 'np' : 's'} ${m}`), onMemberRemoved: (s, m) => events.push(`-${s === 'np' ? 'np' : 's'} ${m}`) });
    const sel = parseSelector("app == 'web'");
    const set = selectorIPSet(sel);
    idx.onIPSetActive(set);
    idx.onIPSetActive({ ...namedPortIPSet(sel, 'tcp', 'http'), id: 'np' });
    idx.onEndpointUpdate('a', ep('a', ['10.0.0.1/32'], ['fd00::1/128'], 80));
    expect(idx.membersOf(set.id)).toEqual(['10.0.0.1/32', 'fd00::1/128']);
    expect(idx.membersOf('np')).toEqual(['10.0.0.1,tcp:80', 'fd00::1,tcp:80']);
    events.length = 0;
    // Two nets → one: only the difference.
    idx.onEndpointUpdate('a', ep('a', [], ['fd00::1/128'], 80));
    expect(events).toEqual(['-s 10.0.0.1/32', '-np 10.0.0.1,tcp:80']);
    events.length = 0;
    // One net → another single net and a new port.
    idx.onEndpointUpdate('a', ep('a', ['10.0.0.2/32'], [], 81));
    expect(idx.membersOf(set.id)).toEqual(['10.0.0.2/32']);
    expect(idx.membersOf('np')).toEqual(['10.0.0.2,tcp:81']);
    events.length = 0;
    // The same addresses and ports again: nothing.
    idx.onEndpointUpdate('a', ep('a', ['10.0.0.2/32'], [], 81));
    expect(events).toEqual([]);
    // A second endpoint sharing the address holds a reference; deleting one keeps the member.
    idx.onEndpointUpdate('b', ep('b', ['10.0.0.2/32', '10.0.0.3/32'], []));
    idx.onEndpointUpdate('a', null);
    expect(idx.membersOf(set.id)).toEqual(['10.0.0.2/32', '10.0.0.3/32']);
    expect(idx.membersOf('np')).toEqual([]);
    expect(idx.endpointCount).toBe(1);
  });
});
