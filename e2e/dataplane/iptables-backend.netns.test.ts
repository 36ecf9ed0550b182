/**
 * `--iptables-backend auto` on real iptables: a network namespace is seeded the way a node's
 * kubelet / kube-proxy leave it (their canary chain, some rules) in one backend, Felix's
 * detection picks that backend, and a real `DataplaneDriver` with the detected backend programs
 * through it — its chains visible in that backend's iptables-save and absent from the other's.
 * Both directions, the rule-count fallback, the empty namespace (nft), and real traffic
 * enforced through legacy.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { V3Resource } from '../../src/api/index.ts';
import { DataplaneDriver, NetnsCommandRunner } from '../../src/dataplane/index.ts';
import { detectIptablesBackend } from '../../src/dataplane/iptables/iptables-backend.ts';
import { Harness, matrix, networkPolicy } from './harness.ts';
import { createNetns } from './netns.ts';
import { inNs } from './node-state.ts';
import type { Update } from '../../src/syncer/index.ts';

type Backend = 'nft' | 'legacy';

/** `iptables-<backend>-restore --noflush` of `text` in both families. */
function seed(ns: string, backend: Backend, text: string): void {
  for (const family of ['iptables', 'ip6tables']) inNs(ns, [`${family}-${backend}-restore`, '--noflush'], text);
}

const KUBELET_HINT = '*mangle\n:KUBE-IPTABLES-HINT - [0:0]\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n';
const rules = (n: number): string => `*filter\n${Array.from({ length: n }, (_, i) => `-A INPUT -p tcp --dport ${9000 + i} -j ACCEPT`).join('\n')}\nCOMMIT\n`;

/** Our chains and hash-commented rules in `backend`'s save of both families. */
function owned(ns: string, backend: Backend): string[] {
  const out: string[] = [];
  for (const family of ['iptables', 'ip6tables']) {
    out.push(...inNs(ns, [`${family}-${backend}-save`]).split('\n').filter((l) => l.startsWith(':cali-') || l.includes('cali:')));
  }
  return out;
}

/** A driver for `backend` programs its static chains and hooks (IPv4 and IPv6). */
async function program(ns: string, backend: Backend): Promise<void> {
  const driver = new DataplaneDriver({ runner: new NetnsCommandRunner(ns), backend, ipVersions: [4, 6] });
  const stop = new AbortController();
  const running = driver.run(stop.signal);
  try {
    driver.send({ type: 'InSync' });
    await driver.flushed();
  } finally {
    stop.abort();
    await running;
  }
}

describe('iptables backend detection (Felix auto) on real iptables', () => {
  const namespaces: Array<{ destroy: () => void }> = [];
  const fresh = (): string => {
    const ns = createNetns('bk');
    namespaces.push(ns);
    return ns.name;
  };
  afterEach(() => {
    for (const ns of namespaces.splice(0)) ns.destroy();
  });

  const cases: Array<{ name: string; seed: Array<[Backend, string]>; want: Backend; reason: RegExp }> = [
    {
      name: "kubelet's canary in legacy (nft holds more rules) → legacy",
      seed: [['legacy', KUBELET_HINT], ['nft', rules(5)]],
      want: 'legacy',
      reason: /KUBE-IPTABLES-HINT chain is in iptables-legacy/,
    },
    {
      name: "kubelet's canary in nft (legacy holds more rules) → nft",
      seed: [['nft', KUBELET_HINT], ['legacy', rules(5)]],
      want: 'nft',
      reason: /KUBE-IPTABLES-HINT chain is in iptables-nft/,
    },
    { name: 'no canary, legacy holds more rules → legacy', seed: [['legacy', rules(3)], ['nft', rules(1)]], want: 'legacy', reason: /iptables-legacy holds more rules \(6\) than iptables-nft \(2\)/ },
    { name: 'no canary, nft holds more rules → nft', seed: [['legacy', rules(1)], ['nft', rules(3)]], want: 'nft', reason: /iptables-nft holds more rules/ },
    { name: 'an empty namespace → nft', seed: [], want: 'nft', reason: /both backends hold 0 rules: nft/ },
  ];

  it.each(cases)('$name, and the driver programs through it alone', async ({ seed: seeds, want, reason }) => {
    const ns = fresh();
    for (const [backend, text] of seeds) seed(ns, backend, text);
    const detected = await detectIptablesBackend(new NetnsCommandRunner(ns));
    expect(detected.backend).toBe(want);
    expect(detected.reason).toMatch(reason);

    await program(ns, detected.backend);
    const other: Backend = want === 'nft' ? 'legacy' : 'nft';
    const mine = owned(ns, want);
    expect(mine).toContain(':cali-FORWARD - [0:0]');
    expect(mine).toContain(':cali-tessera-owner - [0:0]');
    expect(mine.filter((l) => l.startsWith('-A FORWARD ') && l.includes('-j cali-FORWARD'))).toHaveLength(2);
    expect(owned(ns, other)).toEqual([]);
    // Programming keeps the verdict: the next start detects the same backend.
    expect((await detectIptablesBackend(new NetnsCommandRunner(ns))).backend).toBe(want);
  });

  it('detection changes nothing: a legacy table it only looked at is not created', async () => {
    const ns = fresh();
    await detectIptablesBackend(new NetnsCommandRunner(ns));
    expect(inNs(ns, ['iptables-legacy-save'])).toBe('');
    expect(inNs(ns, ['ip6tables-legacy-save'])).toBe('');
  });
});

describe('real traffic through the detected legacy backend', () => {
  let h: Harness | undefined;
  afterAll(async () => {
    await h?.dispose();
  });

  it('a node whose kubelet uses legacy: policy is enforced by legacy rules, nft holds none', async () => {
    h = await Harness.create();
    // The harness's first driver never wrote (no InSync yet): replace it with one on the
    // backend detected after the node's kubelet hint is in place.
    await h.stopDriver();
    seed(h.topo.nodeNs, 'legacy', KUBELET_HINT);
    const detected = await detectIptablesBackend(new NetnsCommandRunner(h.topo.nodeNs));
    expect(detected.backend).toBe('legacy');
    h.startDriver({ backend: detected.backend });

    const webIngress = networkPolicy('web-ingress', {
      selector: "app == 'web'",
      types: ['Ingress'],
      ingress: [{ action: 'Allow', source: { selector: "app == 'client'" } }],
    });
    const upsert = (...resources: V3Resource[]): Update[] => resources.map((resource) => ({ op: 'upsert', resource }));
    await h.update(upsert(...h.baseResources(), webIngress));
    expect(await h.check(matrix(['other->web/tcp', 'other->web/udp']))).toEqual([]);
    expect(owned(h.topo.nodeNs, 'legacy')).toContain(':cali-pi-np/shop/web-ingress - [0:0]');
    expect(owned(h.topo.nodeNs, 'nft')).toEqual([]);
  });
});
