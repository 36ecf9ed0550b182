/**
 * Human-readable explanations of verdicts (`tessera explain`, simulate's mismatches, the
 * HTML report): the decision in one line, and the walk tier by tier, policy by policy,
 * rule by rule, with the first failed criterion of every rule that did not match.
 *
 * Rules are named as in the object: `ingress[0]` is the first rule of `spec.ingress` (for
 * a converted Kubernetes policy, of the knp.default.* policy). IP sets are shown by the
 * selector they stand for (`IpSetNames`). A tier that has no Tier object (`missingTiers`) is
 * marked where the walk meets it: its policies are ordered after every existing tier. An
 * invalid policy or profile (`failClosed`) is marked with its errors where the walk meets its
 * fail-closed stand-in, and so is an end-of-tier DROP in a tier holding one.
 */
import type { PolicyId } from '../proto/index.ts';
import type { IpSetNames } from './ipset-names.ts';
import type { FlowStage } from './host-flow.ts';
import { isEndpoint, isHost, type NetworkSetHit, type SimPeer, type Verdict } from './simulation.ts';
import type { Decision, Direction, DirectionVerdict, RuleTrace } from './verdict-engine.ts';

/** `NetworkPolicy ns/name`, `GlobalNetworkPolicy name`, or `ClusterNetworkPolicy name` for a converted SIG-Network one. */
export function policyName(id: PolicyId): string {
  if (id.kind === 'KubernetesClusterNetworkPolicy') return `ClusterNetworkPolicy ${id.name}`;
  return id.kind === 'NetworkPolicy' ? `NetworkPolicy ${id.namespace ?? ''}/${id.name}` : `GlobalNetworkPolicy ${id.name}`;
}

const ACTION_NAMES: Readonly<Record<string, string>> = { allow: 'Allow', deny: 'Deny', 'next-tier': 'Pass', log: 'Log' };

/** `egress[2]`, and for a ClusterNetworkPolicy the CNP rule it came from (`names.ruleName`). */
function ruleRef(policy: PolicyId, direction: Direction, index: number, names: IpSetNames | undefined): string {
  const cnpRule = names?.ruleName(policy, direction, index);
  return cnpRule === undefined ? `${direction}[${index}]` : `${cnpRule} as ${direction}[${index}]`;
}

/** One line: what decided this direction (`names`: to name a ClusterNetworkPolicy's rule). */
export function describeDecision(decision: Decision, direction: Direction, names?: IpSetNames): string {
  switch (decision.kind) {
    case 'rule':
      return `${decision.action === 'allow' ? 'allowed' : 'denied'} by ${policyName(decision.policy)} ${ruleRef(decision.policy, direction, decision.ruleIndex, names)} (${ACTION_NAMES[decision.action]}) in tier ${decision.tier}`;
    case 'end-of-tier':
      return `denied at the end of tier ${decision.tier}: no policy in it allowed or passed the packet (defaultAction Deny)`;
    case 'profile':
      return `${decision.action === 'allow' ? 'allowed' : 'denied'} by profile ${decision.profile} ${direction}[${decision.ruleIndex}] (${ACTION_NAMES[decision.action]})`;
    case 'no-profile-matched':
      return 'denied: no tier decided and no profile allowed it (the endpoint chain\'s final DROP)';
    case 'outside-cluster':
      return 'not policed: the peer is an address outside the cluster (no endpoint of its own)';
    case 'forward-default':
      return 'allowed: the host endpoint has no applyOnForward policy ("Allow forwarded traffic by default")';
    case 'no-verdict':
      return 'no verdict: the chain ends without accepting or dropping; the packet goes on';
    case 'failsafe':
      return `allowed by ${decision.chain} (failsafe ${decision.entry})`;
    case 'no-host-endpoint':
      return 'not policed: no host endpoint matches the interface';
    case 'host-to-local-workload':
      return 'not policed: traffic from a host to its own pods is always allowed (cali-OUTPUT returns for cali+)';
    case 'endpoint-to-host-action':
      return `${decision.action === 'allow' ? 'allowed' : 'denied'} by DefaultEndpointToHostAction ${decision.setting} (pod to its own host: no host endpoint ingress policy applies)`;
    case 'untracked-mismatch':
      return decision.untracked === 'request'
        ? "denied: the request was untracked here but its reply is not (no untracked allow in the reverse direction): conntrack takes the reply for an unknown connection's first packet, INVALID, and drops it"
        : "denied: the reply was untracked here but the request was not: conntrack never saw the reply, so the client's next packet is INVALID and dropped";
  }
}

/** Decisions that no tier/profile walk stands behind. */
const FIXED_DECISIONS: ReadonlySet<Decision['kind']> = new Set(['outside-cluster', 'forward-default', 'failsafe', 'no-host-endpoint', 'host-to-local-workload', 'endpoint-to-host-action', 'untracked-mismatch']);

function nameSets(text: string, names: IpSetNames | undefined): string {
  if (names === undefined) return text;
  return text.replace(/(IP set|named-port set) ([^\s,]+)/g, (m, _what: string, id: string) => {
    const d = names.describe(id);
    return d === id ? m : `{${d}}`;
  });
}

function ruleLine(r: RuleTrace, direction: Direction, names: IpSetNames | undefined, policy?: PolicyId): string {
  const head = `${policy === undefined ? `${direction}[${r.index}]` : ruleRef(policy, direction, r.index, names)} ${ACTION_NAMES[r.action] ?? r.action}`;
  if (r.returnedOnPassMark === true) return `${head}: no match — ${nameSets(r.mismatch ?? '', names)}; returns anyway: the pass mark is already set`;
  if (r.mismatch !== undefined) return `${head}: no match — ${nameSets(r.mismatch, names)}`;
  // A `services` match names the Service and the member the packet was found as.
  return r.matchedBy === undefined ? `${head}: matched` : `${head}: matched — ${r.matchedBy.map((m) => nameSets(m, names)).join('; ')}`;
}

/** The walk of one direction, indented by `indent`; `missingTiers` names tiers without a Tier object. */
export function describeWalk(
  v: DirectionVerdict,
  names: IpSetNames | undefined,
  indent = '  ',
  missingTiers: ReadonlySet<string> = new Set(),
  failClosed: ReadonlyMap<string, string> = new Map(),
): string[] {
  const lines: string[] = [];
  if (FIXED_DECISIONS.has(v.decision.kind)) return lines;
  const dir = v.direction;
  const tiers = v.tiers ?? [];
  // A chain without profiles (preDNAT, untracked, forward) ends where its tiers do.
  if (tiers.length === 0) lines.push(v.decision.kind === 'no-verdict' ? `${indent}no tier has ${dir} policies in this chain` : `${indent}no tier has ${dir} policies for this endpoint: straight to its profiles`);
  for (const t of tiers) {
    lines.push(`${indent}tier ${t.tier} (defaultAction ${t.defaultAction})`);
    if (missingTiers.has(t.tier)) lines.push(`${indent}  (no Tier ${t.tier} exists: ordered after every existing tier, defaultAction Deny)`);
    for (const p of t.policies) {
      lines.push(`${indent}  ${policyName(p.policy)}`);
      const invalid = failClosed.get(policyName(p.policy));
      // A ClusterNetworkPolicy fails closed rule by rule (its other rules stay), others as a whole.
      const cnp = p.policy.kind === 'KubernetesClusterNetworkPolicy';
      if (invalid !== undefined) lines.push(cnp ? `${indent}    (rules that do not convert are enforced fail-closed — Deny/Pass as Deny, Accept dropped: ${invalid})` : `${indent}    (invalid, enforced fail-closed with no rules: ${invalid})`);
      if (p.outcome === 'missing') lines.push(`${indent}    (not programmed on this node)`);
      else if (p.rules.length === 0) lines.push(`${indent}    (no ${dir} rules)`);
      for (const r of p.rules) lines.push(`${indent}    ${ruleLine(r, dir, names, p.policy)}`);
      if (p.outcome === 'pass') lines.push(`${indent}    → Pass: skip the rest of tier ${t.tier}`);
      else if (p.outcome === 'no-match') lines.push(`${indent}    → no rule decided: next policy`);
    }
    if (t.outcome === 'end-of-tier') {
      lines.push(t.defaultAction === 'Deny' ? `${indent}  end of tier ${t.tier}: defaultAction Deny → DROP` : `${indent}  end of tier ${t.tier}: defaultAction Pass → next tier`);
      const stand = t.policies.filter((p) => p.policy.kind !== 'KubernetesClusterNetworkPolicy' && failClosed.has(policyName(p.policy))).map((p) => policyName(p.policy));
      if (t.defaultAction === 'Deny' && stand.length > 0) lines.push(`${indent}  (reached because of the fail-closed stand-in of invalid ${stand.join(', ')})`);
    }
  }
  if (v.decision.kind === 'profile' || v.decision.kind === 'no-profile-matched') {
    for (const p of v.profiles ?? []) {
      lines.push(`${indent}profile ${p.profile}`);
      const invalid = failClosed.get(`Profile ${p.profile}`);
      if (invalid !== undefined) lines.push(`${indent}  (invalid, enforced fail-closed with no rules: ${invalid})`);
      if (p.outcome === 'missing') lines.push(`${indent}  (not programmed on this node)`);
      else if (p.rules.length === 0) lines.push(`${indent}  (no ${dir} rules)`);
      for (const r of p.rules) lines.push(`${indent}  ${ruleLine(r, dir, names)}`);
      if (p.outcome === 'pass') lines.push(`${indent}  → Pass: the profile returns without accepting; next profile`);
    }
    if (v.decision.kind === 'no-profile-matched') lines.push(`${indent}no profile matched → DROP`);
  }
  return lines;
}

function endpointLabel(e: SimPeer): string {
  if (isHost(e)) return `host ${e.node} (${e.ip})`;
  return isEndpoint(e) ? `${e.id} (${e.ip} on ${e.node})` : `${e.ip} (outside the cluster)`;
}

const KIND_NAMES: Readonly<Record<string, string>> = { normal: 'normal policy', forward: 'applyOnForward policy', 'pre-dnat': 'preDNAT policy', untracked: 'doNotTrack policy' };

/** Who owns a stage's chain: `HostEndpoint hep-1 (preDNAT policy, ingress)`. */
function stageOwner(st: FlowStage): string {
  const dir = st.verdict.direction;
  // A stage without a chain kind is a chain's conntrack rule (the INVALID drop of an untracked mismatch).
  const what = st.kind === undefined ? 'ctstate INVALID rule' : KIND_NAMES[st.kind];
  if (st.hostEndpoint !== undefined) return `HostEndpoint ${st.hostEndpoint} (${what}, ${dir})`;
  if (st.workload !== undefined) return `pod ${st.workload} (${dir})`;
  return dir;
}

/**
 * The path of a flow through host endpoints, one line per stage (node, table, chain, owner,
 * decision), each followed by its walk; the stage that dropped the packet is marked.
 */
export function describeStages(stages: readonly FlowStage[], names: IpSetNames | undefined, missingTiers: ReadonlySet<string> = new Set(), failClosed: ReadonlyMap<string, string> = new Map()): string[] {
  const lines = ['path (iptables, in packet order):'];
  for (const st of stages) {
    const mark = st.verdict.allowed ? '' : 'DROPPED at ';
    const reply = st.packet === 'reply' ? 'reply: ' : '';
    lines.push(`  ${reply}${mark}${st.node} ${st.table} ${st.chain} — ${stageOwner(st)}: ${describeDecision(st.verdict.decision, st.verdict.direction, names)}`);
    if (st.workload === undefined) lines.push(...describeWalk(st.verdict, names, '      ', missingTiers, failClosed));
  }
  return lines;
}

/** The stage that dropped the flow, in one line: `node-2 filter cali-fh-any-interface-at-all (HostEndpoint hep-2 …)`. */
export function describeDroppingStage(stages: readonly FlowStage[]): string | undefined {
  const st = stages.find((x) => !x.verdict.allowed);
  if (st === undefined) return undefined;
  const d = st.verdict.decision;
  const which = d.kind === 'untracked-mismatch' && d.untracked === 'reply' ? "the client's next packet, " : st.packet === 'reply' ? 'the reply, ' : '';
  return `${which}on ${st.node}, table ${st.table}, chain ${st.chain} — ${stageOwner(st)}`;
}

/**
 * Where an address outside the cluster sits in the network sets, one line per holding entry:
 * `203.0.113.77 is in GlobalNetworkSet card-networks (203.0.113.77/32) {role: payment-provider}`.
 * The rules above show which selectors matched; these lines say through which set.
 */
export function describeNetworkSets(ip: string, hits: readonly NetworkSetHit[]): string[] {
  if (hits.length === 0) return [`${ip} is in no NetworkSet or GlobalNetworkSet`];
  return hits.map((h) => {
    const labels = Object.entries(h.labels).map(([k, v]) => `${k}: ${v}`).join(', ');
    const name = h.kind === 'NetworkSet' ? `${h.namespace ?? ''}/${h.name}` : h.name;
    return `${ip} is in ${h.kind} ${name} (${h.net})${labels === '' ? '' : ` {${labels}}`}`;
  });
}

/** The full explanation of a verdict, as `tessera explain` prints it. */
export function describeVerdict(
  from: SimPeer,
  to: SimPeer,
  protocol: string,
  port: number,
  v: Verdict,
  names: IpSetNames | undefined,
  missingTiers: ReadonlySet<string> = new Set(),
  failClosed: ReadonlyMap<string, string> = new Map(),
): string[] {
  const lines = [`${from.id} → ${to.id} ${protocol}/${port}: ${v.allowed ? 'ALLOWED' : 'DENIED'}`];
  if (v.stages !== undefined) {
    const dropped = describeDroppingStage(v.stages);
    if (dropped !== undefined) lines.push(`dropped ${dropped}`);
    lines.push(...describeStages(v.stages, names, missingTiers, failClosed));
  }
  // A host side's walk is its stage's, printed with the path already.
  const walk = (peer: SimPeer, d: DirectionVerdict): string[] => (v.stages !== undefined && isHost(peer) ? [] : describeWalk(d, names, '  ', missingTiers, failClosed));
  lines.push(`egress of ${endpointLabel(from)}: ${describeDecision(v.egress.decision, 'egress', names)}`);
  lines.push(...walk(from, v.egress));
  if (!v.egress.allowed) lines.push(`ingress of ${endpointLabel(to)}: ${describeDecision(v.ingress.decision, 'ingress', names)} (not reached: egress already dropped the packet)`);
  else lines.push(`ingress of ${endpointLabel(to)}: ${describeDecision(v.ingress.decision, 'ingress', names)}`);
  lines.push(...walk(to, v.ingress));
  return lines;
}
