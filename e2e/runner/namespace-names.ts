/**
 * Unique Kubernetes namespace names for the scenario runner.
 *
 * Scenario files name their namespaces `x`, `y`, `shop`…; two runs against one (reused)
 * control plane, or a run after one that was killed, would otherwise meet in the same
 * namespaces (409 on pods, stray WorkloadEndpoints, relabelled namespaces). So each run maps
 * every scenario namespace to `<name>-<run id>` and rewrites, once, everything in the
 * scenario that names a namespace (`NamespaceNames.scenario`). The runner then works only
 * with the rewritten scenario and reports with the original one.
 *
 * Invariants:
 * - `unique(n)` is a DNS-1123 label (≤ 63 characters), distinct for distinct `n` of one run and
 *   distinct across runs with distinct run ids. Names the scenario does not declare
 *   (`kube-system`, `tessera-system`) are cluster namespaces and map to themselves.
 * - Verdicts are unchanged: every value that the API server or the controllers derive from a
 *   namespace's name is rewritten where a selector or label compares with it —
 *   - namespace labels: `kubernetes.io/metadata.name` (the API server sets it to the real name);
 *   - Kubernetes NetworkPolicy peers: `namespaceSelector` matchLabels / matchExpressions on
 *     `kubernetes.io/metadata.name`;
 *   - ClusterNetworkPolicy (`policy.networking.k8s.io`): the same, in the subject's `namespaces`
 *     and `pods.namespaceSelector` and in every ingress/egress peer's `namespaces` and
 *     `pods.namespaceSelector`;
 *   - Calico `namespaceSelector` (a policy's, a rule side's): `kubernetes.io/metadata.name` and
 *     `projectcalico.org/name` (the name label of a namespace profile);
 *   - Calico endpoint selectors (`selector`, `notSelector`): `projectcalico.org/namespace` and
 *     the `pcns.`-prefixed forms of the two namespace labels;
 *   - a rule side's `services.namespace`, every `metadata.namespace`, `deletePolicies`,
 *     `podLabels`, `namespaceLabels` and the probes' `ns/pod` keys.
 *   Every other label (`ns: x`, `team: ops`, pod labels, service-account selectors) is left
 *   byte for byte as written, and so is the text of a selector in which nothing changed.
 * - A Calico selector that compares a namespace-name label with `contains`, `starts with` or
 *   `ends with` becomes `label in {…}` over the unique names of the scenario's namespaces that
 *   satisfied the comparison: the random suffix must neither add matches (`contains "a"`) nor
 *   remove them (`ends with "x"`). Namespaces outside the scenario hold no scenario pods, so
 *   dropping them from such a comparison changes no verdict.
 */
import { createHash, randomBytes } from 'node:crypto';

import { makeGroup, makeNot, makeSet, parseSelectorNode, toCanonicalString, type SelectorNode } from '../../src/selector/index.ts';
import { stepsOf, type ManifestObject, type PolicyRef, type Probe, type Scenario, type Step } from './scenario.ts';

/** The label the API server sets on every namespace to its name. */
export const METADATA_NAME_LABEL = 'kubernetes.io/metadata.name';
/** Calico's name label of a namespace profile (`pcns.projectcalico.org/name` on endpoints). */
export const CALICO_NAME_LABEL = 'projectcalico.org/name';
/** The namespace label every WorkloadEndpoint carries. */
export const ENDPOINT_NAMESPACE_LABEL = 'projectcalico.org/namespace';

/**
 * Annotation (not a label: no selector can see it) on every namespace the runner creates, its
 * value the run id: tells a run's namespaces from others' on a shared control plane.
 */
export const RUN_ANNOTATION = 'e2e.tessera.dev/run';

/** Labels whose value is a namespace name, by the kind of labels a selector is evaluated on. */
const NAMESPACE_KEYS = new Set([METADATA_NAME_LABEL, CALICO_NAME_LABEL]);
const ENDPOINT_KEYS = new Set([ENDPOINT_NAMESPACE_LABEL, `pcns.${METADATA_NAME_LABEL}`, `pcns.${CALICO_NAME_LABEL}`]);

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_LABEL = 63;
const RUN_ID = /^[a-z0-9]{1,16}$/;

/** A fresh run id: 8 random lowercase hex digits. */
export function newRunId(): string {
  return randomBytes(4).toString('hex');
}

/**
 * `<name>-<runId>`. A name too long for that keeps its first characters and gains 8 hex of
 * sha1(name) before the run id, so two long names with a common prefix stay distinct.
 * Throws `RangeError` when `runId` is not 1–16 lowercase letters/digits or the result is not a
 * DNS-1123 label (the scenario's name was not one).
 */
export function uniqueNamespaceName(name: string, runId: string): string {
  if (!RUN_ID.test(runId)) throw new RangeError(`runId ${JSON.stringify(runId)}: must be 1–16 lowercase letters or digits`);
  let out = `${name}-${runId}`;
  if (out.length > MAX_LABEL) {
    const hash = createHash('sha1').update(name).digest('hex').slice(0, 8);
    out = `${name.slice(0, MAX_LABEL - runId.length - hash.length - 2)}-${hash}-${runId}`;
  }
  if (!DNS1123_LABEL.test(out)) throw new RangeError(`namespace ${JSON.stringify(name)}: ${JSON.stringify(out)} is not a DNS-1123 label`);
  return out;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The mapping of one run: scenario namespace name ↔ Kubernetes namespace name. */
export class NamespaceNames {
  private readonly toUnique = new Map<string, string>();
  private readonly toOriginal = new Map<string, string>();

  constructor(
    originals: Iterable<string>,
    readonly runId: string = newRunId(),
  ) {
    for (const name of originals) {
      const u = uniqueNamespaceName(name, runId);
      this.toUnique.set(name, u);
      this.toOriginal.set(u, name);
    }
  }

  /** Every namespace of every scenario in `scenarios`, under one run id. */
  static of(scenarios: readonly Scenario[], runId?: string): NamespaceNames {
    return new NamespaceNames(new Set(scenarios.flatMap((s) => s.namespaces.map((n) => n.name))), runId);
  }

  /** The Kubernetes name of scenario namespace `name` (undeclared names map to themselves). */
  unique(name: string): string {
    return this.toUnique.get(name) ?? name;
  }

  /** The scenario's name for Kubernetes namespace `name` (inverse of `unique`). */
  original(name: string): string {
    return this.toOriginal.get(name) ?? name;
  }

  /** scenario name → Kubernetes name, for every declared namespace. */
  get mapping(): ReadonlyMap<string, string> {
    return this.toUnique;
  }

  /** `ns/pod` with the namespace mapped by `f`. */
  private mapKey(key: string, f: (ns: string) => string): string {
    const slash = key.indexOf('/');
    return slash < 0 ? key : `${f(key.slice(0, slash))}/${key.slice(slash + 1)}`;
  }

  podKey(key: string): string {
    return this.mapKey(key, (n) => this.unique(n));
  }

  probe(p: Probe): Probe {
    return { ...p, from: this.podKey(p.from), to: this.podKey(p.to) };
  }

  /** A probe of the rewritten scenario, with the scenario's own names again (for reports). */
  originalProbe(p: Probe): Probe {
    const back = (key: string): string => this.mapKey(key, (n) => this.original(n));
    return { ...p, from: back(p.from), to: back(p.to) };
  }

  /** Namespace labels with `kubernetes.io/metadata.name` mapped; every other label as is. */
  namespaceLabels(labels: Record<string, string>): Record<string, string> {
    const v = labels[METADATA_NAME_LABEL];
    return v === undefined ? labels : { ...labels, [METADATA_NAME_LABEL]: this.unique(v) };
  }

  ref(r: PolicyRef): PolicyRef {
    return r.namespace === undefined ? r : { ...r, namespace: this.unique(r.namespace) };
  }

  /** A policy (or Tier, Profile) with every namespace reference mapped; a new object. */
  manifest(o: ManifestObject): ManifestObject {
    const ns = o.metadata.namespace;
    const metadata = ns === undefined ? o.metadata : { ...o.metadata, namespace: this.unique(ns) };
    const spec = o['spec'];
    if (!isObject(spec)) return { ...o, metadata };
    if (o.apiVersion === 'networking.k8s.io/v1') return { ...o, metadata, spec: this.kubernetesSpec(spec) };
    if (o.apiVersion.startsWith('projectcalico.org/')) return { ...o, metadata, spec: this.calicoSpec(spec) };
    if (o.apiVersion.startsWith('policy.networking.k8s.io/')) return { ...o, metadata, spec: this.clusterNetworkPolicySpec(spec) };
    return { ...o, metadata };
  }

  /** The whole scenario as the cluster sees it (same shape, same order, same verdicts). */
  scenario(s: Scenario): Scenario {
    const step = (st: Step): Step => ({
      ...st,
      ...(st.namespaceLabels === undefined ? {} : { namespaceLabels: st.namespaceLabels.map((n) => ({ name: this.unique(n.name), labels: this.namespaceLabels(n.labels) })) }),
      ...(st.podLabels === undefined ? {} : { podLabels: st.podLabels.map((p) => ({ ...p, namespace: this.unique(p.namespace) })) }),
      ...(st.policies === undefined ? {} : { policies: st.policies.map((o) => this.manifest(o)) }),
      ...(st.deletePolicies === undefined ? {} : { deletePolicies: st.deletePolicies.map((r) => this.ref(r)) }),
      probes: st.probes.map((p) => this.probe(p)),
    });
    const [first, ...rest] = stepsOf(s).map(step);
    return {
      ...s,
      namespaces: s.namespaces.map((n) => ({ ...n, name: this.unique(n.name), ...(n.labels === undefined ? {} : { labels: this.namespaceLabels(n.labels) }) })),
      pods: s.pods.map((p) => ({ ...p, namespace: this.unique(p.namespace) })),
      policies: first?.policies ?? [],
      probes: first?.probes ?? [],
      ...(s.steps === undefined ? {} : { steps: rest }),
    };
  }

  private kubernetesSpec(spec: Json): Json {
    const peers = (rules: unknown, side: 'from' | 'to'): unknown =>
      Array.isArray(rules)
        ? rules.map((r: unknown) =>
            isObject(r) && Array.isArray(r[side])
              ? { ...r, [side]: (r[side] as unknown[]).map((p) => (isObject(p) && isObject(p['namespaceSelector']) ? { ...p, namespaceSelector: this.labelSelector(p['namespaceSelector']) } : p)) }
              : r,
          )
        : rules;
    return {
      ...spec,
      ...('ingress' in spec ? { ingress: peers(spec['ingress'], 'from') } : {}),
      ...('egress' in spec ? { egress: peers(spec['egress'], 'to') } : {}),
    };
  }

  /**
   * A ClusterNetworkPolicy spec: the namespace selectors of its subject and of its rules' peers
   * (`namespaces`, `pods.namespaceSelector`); `nodes`, `networks` and the rest as written.
   */
  private clusterNetworkPolicySpec(spec: Json): Json {
    const target = (t: unknown): unknown => {
      if (!isObject(t)) return t;
      const out: Json = { ...t };
      if (isObject(t['namespaces'])) out['namespaces'] = this.labelSelector(t['namespaces']);
      const pods = t['pods'];
      if (isObject(pods) && isObject(pods['namespaceSelector'])) out['pods'] = { ...pods, namespaceSelector: this.labelSelector(pods['namespaceSelector']) };
      return out;
    };
    const rules = (list: unknown, side: 'from' | 'to'): unknown =>
      Array.isArray(list) ? list.map((r: unknown) => (isObject(r) && Array.isArray(r[side]) ? { ...r, [side]: (r[side] as unknown[]).map(target) } : r)) : list;
    return {
      ...spec,
      ...('subject' in spec ? { subject: target(spec['subject']) } : {}),
      ...('ingress' in spec ? { ingress: rules(spec['ingress'], 'from') } : {}),
      ...('egress' in spec ? { egress: rules(spec['egress'], 'to') } : {}),
    };
  }

  /** A Kubernetes LabelSelector over namespace labels. */
  private labelSelector(sel: Json): Json {
    const out: Json = { ...sel };
    const ml = sel['matchLabels'];
    if (isObject(ml) && typeof ml[METADATA_NAME_LABEL] === 'string') out['matchLabels'] = { ...ml, [METADATA_NAME_LABEL]: this.unique(ml[METADATA_NAME_LABEL]) };
    const me = sel['matchExpressions'];
    if (Array.isArray(me)) {
      out['matchExpressions'] = me.map((e: unknown) =>
        isObject(e) && e['key'] === METADATA_NAME_LABEL && Array.isArray(e['values']) ? { ...e, values: e['values'].map((v: unknown) => (typeof v === 'string' ? this.unique(v) : v)) } : e,
      );
    }
    return out;
  }

  private calicoSpec(spec: Json): Json {
    const out = this.selectors(spec);
    for (const dir of ['ingress', 'egress'] as const) {
      const rules = spec[dir];
      if (!Array.isArray(rules)) continue;
      out[dir] = rules.map((r: unknown) => {
        if (!isObject(r)) return r;
        const rule = { ...r };
        for (const side of ['source', 'destination'] as const) {
          const e = r[side];
          if (!isObject(e)) continue;
          const entity = this.selectors(e);
          const svc = e['services'];
          if (isObject(svc) && typeof svc['namespace'] === 'string') entity['services'] = { ...svc, namespace: this.unique(svc['namespace']) };
          rule[side] = entity;
        }
        return rule;
      });
    }
    return out;
  }

  /**
   * A copy of `o` with its `selector`/`notSelector` (endpoint labels) and `namespaceSelector`
   * (namespace labels) rewritten. `serviceAccountSelector` and `serviceAccounts.selector` are
   * over service-account labels, where `projectcalico.org/name` is the account's name: left alone.
   */
  private selectors(o: Json): Json {
    const out = { ...o };
    for (const [field, on] of [
      ['selector', 'endpoint'],
      ['notSelector', 'endpoint'],
      ['namespaceSelector', 'namespace'],
    ] as const) {
      const text = o[field];
      if (typeof text === 'string') out[field] = this.selector(text, on);
    }
    return out;
  }

  /**
   * Calico selector `text`, evaluated `on` namespace or endpoint labels, with the values of the
   * labels that name a namespace there mapped (see the module comment
   * for `contains`/`starts with`/`ends with`). Returns `text` itself when nothing changed;
   * otherwise the canonical text of the rewritten tree (same meaning, Calico's spelling).
   * A selector that does not parse is returned as is: the API server or the agent reports it.
   */
  selector(text: string, on: 'namespace' | 'endpoint'): string {
    const keys = on === 'namespace' ? NAMESPACE_KEYS : ENDPOINT_KEYS;
    let root: SelectorNode;
    try {
      root = parseSelectorNode(text);
    } catch {
      return text;
    }
    let changed = false;
    const names = [...this.toUnique.keys()];
    const uniqueWhere = (label: string, keep: (name: string) => boolean): SelectorNode =>
      makeSet('in', label, names.filter(keep).map((x) => this.unique(x)));
    const leaf = (n: SelectorNode, out: SelectorNode): SelectorNode => {
      if (toCanonicalString(out) !== toCanonicalString(n)) changed = true;
      return out;
    };
    const visit = (n: SelectorNode): SelectorNode => {
      switch (n.kind) {
        case 'not':
          return makeNot(visit(n.operand));
        case 'and':
        case 'or':
          return makeGroup(n.kind, n.operands.map(visit));
        case 'all':
        case 'global':
        case 'has':
          return n;
        case 'eq':
        case 'ne':
          return keys.has(n.label) ? leaf(n, { ...n, value: this.unique(n.value) }) : n;
        case 'in':
        case 'notIn':
          return keys.has(n.label) ? leaf(n, makeSet(n.kind, n.label, n.values.map((v) => this.unique(v)))) : n;
        case 'contains':
          return keys.has(n.label) ? leaf(n, uniqueWhere(n.label, (x) => x.includes(n.value))) : n;
        case 'startsWith':
          return keys.has(n.label) ? leaf(n, uniqueWhere(n.label, (x) => x.startsWith(n.value))) : n;
        case 'endsWith':
          return keys.has(n.label) ? leaf(n, uniqueWhere(n.label, (x) => x.endsWith(n.value))) : n;
      }
    };
    const rewritten = visit(root);
    return changed ? toCanonicalString(rewritten) : text;
  }
}
