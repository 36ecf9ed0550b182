/**
 * ClusterNetworkPolicies and Nodes → model policies of kind `KubernetesClusterNetworkPolicy`
 * (Calico 3.32's `model.KindKubernetesClusterNetworkPolicy`), through the converter the tools
 * use (convert/cluster-network-policy-converter.ts). The update processor hands it every update
 * of a ClusterNetworkPolicy of any served version (`isClusterNetworkPolicy`) and of a core v1
 * Node.
 *
 * Guarantees:
 * - a CNP is keyed by its name alone (cluster-scoped; the served versions are one object);
 *   a tier move (Admin ↔ Baseline) removes the old policy key (the update processor's
 *   `setPolicy`);
 * - a rule that does not convert, or that the API validation faults, fails closed as the
 *   converter says (Deny/Pass → a bare Deny, Accept → dropped); the object is reported through
 *   `onInvalid` and counted as fail-closed while it has such a rule;
 * - a CNP the converter cannot place (no readable tier or subject) is reported and held as
 *   deleted, as Calico's tombstone;
 * - Nodes are held as `NodePeerInfo` (name, labels, canonical IP addresses; host names
 *   dropped). A Node upsert or delete that changes neither its labels nor its addresses emits
 *   nothing; one that does re-converts only the CNPs with an egress `nodes` peer, and emits a
 *   policy only when its conversion changed;
 * - never throws on input.
 */
import { formatIP, parseIP } from '../api/cidr.ts';
import type { ClusterNetworkPolicy, NodePeerInfo } from '../api/cluster-network-policy.ts';
import type { K8sNode } from '../api/kubernetes.ts';
import type { GlobalNetworkPolicy } from '../api/types.ts';
import { cnpRuleKey, convertClusterNetworkPolicy, type CnpDirection } from '../convert/cluster-network-policy-converter.ts';
import type { AnyUpdate } from '../syncer/update.ts';
import type { ModelPolicy, ModelUpdate } from './model.ts';

/** The `kind` of a CNP in `InvalidResource` reports and fail-closed counts. */
export const CNP_REPORT_KIND = 'ClusterNetworkPolicy';

/** One finding of the API validation (`validateClusterNetworkPolicy`): a field path and a message. */
export interface CnpFinding {
  readonly path: string;
  readonly message: string;
}

export interface ClusterNetworkPolicyProcessorHooks {
  /**
   * The model policy of a converted CNP, and the converted policy its rules are 1:1 with (a
   * rule the model cannot read is failed closed there too); may throw for a value it cannot read.
   */
  readonly toModel: (gnp: GlobalNetworkPolicy) => { model: ModelPolicy; converted: GlobalNetworkPolicy };
  /** Holds `policy` for the object `rk` (see UpdateProcessor). */
  readonly setPolicy: (rk: string, policy: ModelPolicy) => ModelUpdate[];
  readonly deletePolicy: (rk: string) => ModelUpdate[];
  readonly onInvalid: (invalid: { kind: string; name: string; reason: string; failClosed?: Record<string, never> }) => void;
  /** Records whether the object `rk` is held fail-closed (`kind` undefined: it is not). */
  readonly markFailClosed: (rk: string, kind: string | undefined) => void;
  /** The API validation's errors of a raw CNP; none when absent. */
  readonly validate?: (raw: unknown) => readonly CnpFinding[];
}

const RULE_PATH = /^spec\.(ingress|egress)\[(\d+)\]/;

/** Node `status.addresses` → canonical IPs, in order, duplicates and host names dropped. */
export function nodePeerInfo(node: K8sNode): NodePeerInfo | undefined {
  const name = node.metadata?.name;
  if (typeof name !== 'string' || name === '') return undefined;
  const addresses: string[] = [];
  for (const a of node.status?.addresses ?? []) {
    const ip = parseIP(a?.address);
    if (!ip.ok) continue;
    const text = formatIP(ip.value.bytes);
    if (!addresses.includes(text)) addresses.push(text);
  }
  const labels: Record<string, string> = {};
  for (const k of Object.keys(node.metadata?.labels ?? {}).sort()) {
    const v = node.metadata?.labels?.[k];
    if (typeof v === 'string') labels[k] = v;
  }
  return { name, labels, addresses };
}

function samePeerInfo(a: NodePeerInfo | undefined, b: NodePeerInfo | undefined): boolean {
  return JSON.stringify(a === undefined ? null : [a.labels, a.addresses]) === JSON.stringify(b === undefined ? null : [b.labels, b.addresses]);
}

export class ClusterNetworkPolicyProcessor {
  readonly #hooks: ClusterNetworkPolicyProcessorHooks;
  readonly #nodes = new Map<string, NodePeerInfo>();
  /** The CNPs with a `nodes` peer, as last upserted, for re-conversion. */
  readonly #readingNodes = new Map<string, ClusterNetworkPolicy>();
  /** name → the JSON of the policy last emitted for a CNP reading Nodes (so equal re-conversions emit nothing). */
  readonly #emitted = new Map<string, string>();
  /** name → the converted policy held, with its rules' annotations (what tools name rules by). */
  readonly #converted = new Map<string, GlobalNetworkPolicy>();

  constructor(hooks: ClusterNetworkPolicyProcessorHooks) {
    this.#hooks = hooks;
  }

  /** The update processor's entry point for a CNP or Node update. */
  process(update: AnyUpdate, what: 'cnp' | 'node'): ModelUpdate[] {
    if (what === 'node') return this.#node(update);
    if (update.op === 'delete') return this.#deleteCnp(update.name);
    const raw = update.resource as unknown as ClusterNetworkPolicy;
    const name = (raw as { metadata?: { name?: unknown } }).metadata?.name;
    if (typeof name !== 'string' || name === '') {
      this.#hooks.onInvalid({ kind: CNP_REPORT_KIND, name: String(name), reason: 'not a keyable object' });
      return [];
    }
    return this.#convert(name, raw, false);
  }

  /** The converted policy held for the CNP `name` (its rules 1:1 with the model's), if any. */
  converted(name: string): GlobalNetworkPolicy | undefined {
    return this.#converted.get(name);
  }

  /** Every Node held, as the converter reads them (it orders them by name). */
  get nodes(): readonly NodePeerInfo[] {
    return [...this.#nodes.values()];
  }

  #rk(name: string): string {
    return `${CNP_REPORT_KIND}//${name}`;
  }

  #deleteCnp(name: string): ModelUpdate[] {
    this.#converted.delete(name);
    this.#readingNodes.delete(name);
    this.#emitted.delete(name);
    this.#hooks.markFailClosed(this.#rk(name), undefined);
    return this.#hooks.deletePolicy(this.#rk(name));
  }

  /** Converts and holds one CNP; `onlyIfChanged` (a Node change) emits nothing when the conversion is what was emitted. */
  #convert(name: string, raw: ClusterNetworkPolicy, onlyIfChanged: boolean): ModelUpdate[] {
    const rk = this.#rk(name);
    const failRules = new Map<string, string>();
    const findings: string[] = [];
    for (const f of this.#validate(raw)) {
      const m = RULE_PATH.exec(f.path);
      if (m === null) {
        findings.push(`${f.path}: ${f.message}`);
        continue;
      }
      const key = cnpRuleKey(m[1] as CnpDirection, Number(m[2]));
      failRules.set(key, [failRules.get(key), `${f.path}: ${f.message}`].filter((x) => x !== undefined).join('; '));
    }
    let result: ReturnType<typeof convertClusterNetworkPolicy>;
    try {
      result = convertClusterNetworkPolicy(raw, this.nodes, { failRules });
    } catch (err) {
      result = { policy: null, problem: err instanceof Error ? err.message : String(err), errors: [], readsNodes: false };
    }
    if (result.readsNodes) this.#readingNodes.set(name, raw);
    else this.#readingNodes.delete(name);
    if (result.policy === null) {
      this.#emitted.delete(name);
      this.#converted.delete(name);
      this.#hooks.onInvalid({ kind: CNP_REPORT_KIND, name, reason: [result.problem ?? 'cannot be converted', ...findings].join('; ') });
      this.#hooks.markFailClosed(rk, undefined);
      return this.#hooks.deletePolicy(rk);
    }
    let model: ModelPolicy;
    let converted: GlobalNetworkPolicy;
    try {
      ({ model, converted } = this.#hooks.toModel(result.policy));
    } catch (err) {
      this.#emitted.delete(name);
      this.#converted.delete(name);
      this.#hooks.onInvalid({ kind: CNP_REPORT_KIND, name, reason: err instanceof Error ? err.message : String(err) });
      this.#hooks.markFailClosed(rk, undefined);
      return this.#hooks.deletePolicy(rk);
    }
    const reasons = [...findings, ...result.errors.map((e) => `${e.reason} (${e.outcome === 'deny' ? 'enforced as Deny' : 'dropped'})`)];
    if (result.errors.length > 0) {
      this.#hooks.onInvalid({ kind: CNP_REPORT_KIND, name, reason: reasons.join('; '), failClosed: {} });
      this.#hooks.markFailClosed(rk, CNP_REPORT_KIND);
    } else {
      if (findings.length > 0) this.#hooks.onInvalid({ kind: CNP_REPORT_KIND, name, reason: findings.join('; ') });
      this.#hooks.markFailClosed(rk, undefined);
    }
    this.#converted.set(name, converted);
    const json = JSON.stringify(result.policy);
    if (onlyIfChanged && this.#emitted.get(name) === json) return [];
    if (result.readsNodes) this.#emitted.set(name, json);
    else this.#emitted.delete(name);
    return this.#hooks.setPolicy(rk, model);
  }

  #validate(raw: unknown): readonly CnpFinding[] {
    try {
      return this.#hooks.validate?.(raw) ?? [];
    } catch (err) {
      return [{ path: 'spec', message: `validation failed: ${err instanceof Error ? err.message : String(err)}` }];
    }
  }

  #node(update: AnyUpdate): ModelUpdate[] {
    const name = update.op === 'delete' ? update.name : (update.resource as unknown as K8sNode).metadata?.name;
    if (typeof name !== 'string' || name === '') return [];
    const before = this.#nodes.get(name);
    const after = update.op === 'delete' ? undefined : nodePeerInfo(update.resource as unknown as K8sNode);
    if (samePeerInfo(before, after)) return [];
    if (after === undefined) this.#nodes.delete(name);
    else this.#nodes.set(name, after);
    const out: ModelUpdate[] = [];
    for (const [cnp, raw] of [...this.#readingNodes]) out.push(...this.#convert(cnp, raw, true));
    return out;
  }
}
