/**
 * `tessera explain --live`: after the offline explanation, the kernel's counters on the two
 * pods' nodes for every rule the walk went through — so "the model says rule 1 of
 * shop/knp.default.web drops this" meets "and on node-2 that rule dropped 7 packets".
 *
 * Where the counters come from: each node's agent serves them as JSON on `/rules` (the same
 * numbers as `tessera_rule_packets_total`), reached through the API server's pod proxy
 * (`…/pods/<agent>:9095/proxy/rules`, the agent found by its node among the pods labelled
 * `app.kubernetes.io/name=tessera-agent`), or at a URL given with `--agent-url <node>=<url>`.
 *
 * Counters are per rule and node, not per flow: they count every packet that rule decided on
 * that node since the rule was last written, which the output says.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { RuleCount } from '../dataplane/index.ts';
import { isEndpoint, type DirectionVerdict, type SimPeer, type Verdict } from '../simulate/index.ts';

export type RuleCountsFetcher = (node: string) => Promise<RuleCount[]>;

export const AGENT_NAMESPACE = 'tessera-system';
export const AGENT_LABEL = 'app.kubernetes.io/name=tessera-agent';
export const AGENT_PORT = 9095;

/** Counters from each node's agent: `overrides` first, else through the API server's pod proxy. */
export function agentRuleCounts(kc: KubeConfig | undefined, overrides: ReadonlyMap<string, string>): RuleCountsFetcher {
  return async (node) => {
    const url = overrides.get(node);
    if (url !== undefined) {
      const res = await fetch(new URL('rules', url.endsWith('/') ? url : `${url}/`));
      if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
      return (await res.json()) as RuleCount[];
    }
    if (kc === undefined) throw new Error(`no --agent-url for node ${node}, and no --kubeconfig to find its agent`);
    const core = kc.makeApiClient(CoreV1Api);
    const pods = await core.listNamespacedPod({ namespace: AGENT_NAMESPACE, labelSelector: AGENT_LABEL, fieldSelector: `spec.nodeName=${node}` });
    const pod = pods.items.find((p) => p.status?.phase === 'Running');
    if (pod?.metadata?.name === undefined) throw new Error(`no running tessera agent on node ${node} (pods ${AGENT_LABEL} in ${AGENT_NAMESPACE})`);
    const text = await core.connectGetNamespacedPodProxyWithPath({ name: `${pod.metadata.name}:${AGENT_PORT}`, namespace: AGENT_NAMESPACE, path: 'rules' });
    return JSON.parse(typeof text === 'string' ? text : JSON.stringify(text)) as RuleCount[];
  };
}

/** The lines `--live` adds: per policed side, the counted rules of its walk on its node. */
export async function describeLive(from: SimPeer, to: SimPeer, v: Verdict, fetchCounts: RuleCountsFetcher): Promise<string[]> {
  const lines = ['', 'live: kernel counters on the nodes (packets each rule decided there since it was last written, all flows):'];
  for (const [peer, dv] of [
    [from, v.egress],
    [to, v.ingress],
  ] as const) {
    if (!isEndpoint(peer)) continue;
    let counts: RuleCount[];
    try {
      counts = await fetchCounts(peer.node);
    } catch (e) {
      lines.push(`  ${dv.direction} of ${peer.id} on ${peer.node}: counters unavailable: ${(e as Error).message}`);
      continue;
    }
    lines.push(`  ${dv.direction} of ${peer.id} on ${peer.node}:`);
    const rows = walkCounts(dv, counts);
    if (rows.length === 0) lines.push('    no rule of this walk has counted a packet');
    for (const r of rows) lines.push(`    ${r.deciding ? '→' : ' '} ${r.label}: ${r.packets} packets, ${r.bytes} bytes`);
  }
  return lines;
}

interface Row {
  readonly label: string;
  readonly packets: number;
  readonly bytes: number;
  readonly deciding: boolean;
}

/** The counted rules of the walk's tiers, policies and profiles in this direction (non-zero, and the deciding one always). */
export function walkCounts(dv: DirectionVerdict, counts: readonly RuleCount[]): Row[] {
  const mine = counts.filter((c) => c.direction === dv.direction);
  const d = dv.decision;
  const rows: Row[] = [];
  const add = (c: RuleCount, label: string, deciding: boolean): void => {
    if (c.packets > 0 || deciding) rows.push({ label, packets: c.packets, bytes: c.bytes, deciding });
  };
  for (const tier of dv.tiers ?? []) {
    for (const pt of tier.policies) {
      const p = pt.policy;
      for (const c of mine) {
        if (c.kind !== p.kind || c.name !== p.name || c.namespace !== (p.namespace ?? '')) continue;
        const deciding = d.kind === 'rule' && d.policy.kind === p.kind && d.policy.name === p.name && (d.policy.namespace ?? '') === (p.namespace ?? '') && String(d.ruleIndex) === c.rule;
        add(c, `tier ${tier.tier}, ${p.kind} ${p.namespace === undefined ? '' : `${p.namespace}/`}${p.name} rule ${c.rule} (${c.action})`, deciding);
      }
    }
    for (const c of mine) if (c.rule === 'end-of-tier' && c.tier === tier.tier) add(c, `end of tier ${tier.tier} (deny)`, d.kind === 'end-of-tier' && d.tier === tier.tier);
  }
  for (const pr of dv.profiles ?? []) {
    for (const c of mine) {
      if (c.kind !== 'Profile' || c.name !== pr.profile) continue;
      add(c, `profile ${pr.profile} rule ${c.rule} (${c.action})`, d.kind === 'profile' && d.profile === pr.profile && String(d.ruleIndex) === c.rule);
    }
  }
  for (const c of mine) if (c.rule === 'no-profile-matched') add(c, 'no profile matched (deny)', d.kind === 'no-profile-matched');
  return rows;
}
