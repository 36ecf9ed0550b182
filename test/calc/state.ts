/**
 * State-table machinery (Felix's `states_for_test.go` / `state_test.go`, calico-semantics
 * §6): a `State` is a whole datastore plus the whole expected dataplane; builders return
 * copies; expanders turn a hand-written list into many orderings; flush strategies decide
 * when the harness flushes. The harness feeds the KV deltas between consecutive states and
 * compares the mock dataplane's full state with the expectation.
 */
import { objectKey, type K8sEndpointSlice, type V3Resource } from '../../src/api/index.ts';
import type { DataplaneSnapshot, EndpointTierSummary } from './mock-dataplane.ts';
import type { AnyUpdate, Update } from '../../src/syncer/index.ts';

/** An EndpointSlice as a feed delivers it (`services` rule matches). */
export type EndpointSliceKV = K8sEndpointSlice & {
  readonly apiVersion: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels?: Record<string, string> };
};

/** What a state's datastore holds: v3 resources and EndpointSlices. */
export type KV = V3Resource | EndpointSliceKV;

export interface State {
  readonly name: string;
  /** The datastore, in order (an updated key moves to the end). */
  readonly kvs: readonly KV[];
  readonly ipSets: Readonly<Record<string, readonly string[]>>;
  readonly activePolicies: readonly string[];
  readonly activeProfiles: readonly string[];
  readonly endpointTiers: Readonly<Record<string, readonly EndpointTierSummary[]>>;
}

export function resourceKey(r: KV): string {
  return `${r.kind}/${objectKey(r)}`;
}

export const emptyState: State = { name: 'empty', kvs: [], ipSets: {}, activePolicies: [], activeProfiles: [], endpointTiers: {} };

export class StateBuilder {
  constructor(readonly state: State) {}

  static from(state: State = emptyState): StateBuilder {
    return new StateBuilder(state);
  }

  #with(patch: Partial<State>): StateBuilder {
    return new StateBuilder({ ...this.state, ...patch });
  }

  withName(name: string): StateBuilder {
    return this.#with({ name });
  }

  /** Upserts resources (each moves to the end). */
  withKVUpdates(...resources: KV[]): StateBuilder {
    const keys = new Set(resources.map(resourceKey));
    return this.#with({ kvs: [...this.state.kvs.filter((r) => !keys.has(resourceKey(r))), ...resources] });
  }

  /** Deletes resources by `Kind/ns/name` or `Kind/name`. */
  withKVDeletes(...keys: string[]): StateBuilder {
    const ks = new Set(keys);
    return this.#with({ kvs: this.state.kvs.filter((r) => !ks.has(resourceKey(r))) });
  }

  /** `null` members: the set must not exist; `[]`: it exists and is empty. */
  withIPSet(id: string, members: readonly string[] | null): StateBuilder {
    const ipSets = { ...this.state.ipSets };
    if (members === null) delete ipSets[id];
    else ipSets[id] = [...members].sort();
    return this.#with({ ipSets });
  }

  withoutIPSets(): StateBuilder {
    return this.#with({ ipSets: {} });
  }

  withActivePolicies(...keys: string[]): StateBuilder {
    return this.#with({ activePolicies: [...keys].sort() });
  }

  withActiveProfiles(...names: string[]): StateBuilder {
    return this.#with({ activeProfiles: [...names].sort() });
  }

  /** `null` tiers: the endpoint must not exist. */
  withEndpoint(key: string, tiers: readonly EndpointTierSummary[] | null): StateBuilder {
    const endpointTiers = { ...this.state.endpointTiers };
    if (tiers === null) delete endpointTiers[key];
    else endpointTiers[key] = tiers;
    return this.#with({ endpointTiers });
  }

  build(): State {
    return this.state;
  }
}

/** The updates that move the datastore from `from` to `to`. */
export function kvDeltas(from: State, to: State): (Update | AnyUpdate)[] {
  const before = new Map(from.kvs.map((r) => [resourceKey(r), r]));
  const after = new Set(to.kvs.map(resourceKey));
  const out: (Update | AnyUpdate)[] = [];
  for (const r of to.kvs) {
    const old = before.get(resourceKey(r));
    if (old === undefined || JSON.stringify(old) !== JSON.stringify(r)) out.push({ op: 'upsert', resource: r });
  }
  for (const [key, r] of before) {
    if (!after.has(key)) {
      out.push({
        op: 'delete',
        ...(r.kind === 'EndpointSlice' ? { apiVersion: r.apiVersion } : {}),
        kind: r.kind,
        name: r.metadata.name,
        ...(r.metadata.namespace === undefined ? {} : { namespace: r.metadata.namespace }),
      });
    }
  }
  return out;
}

export function expectedSnapshot(s: State): DataplaneSnapshot {
  const ipSets: Record<string, string[]> = {};
  for (const id of Object.keys(s.ipSets).sort()) ipSets[id] = [...(s.ipSets[id] ?? [])].sort();
  const endpointTiers: Record<string, readonly EndpointTierSummary[]> = {};
  for (const k of Object.keys(s.endpointTiers).sort()) endpointTiers[k] = s.endpointTiers[k] ?? [];
  return { ipSets, activePolicies: [...s.activePolicies].sort(), activeProfiles: [...s.activeProfiles].sort(), endpointTiers };
}

// ---- expanders -----------------------------------------------------------------------------

/** A step of a test plan: updates to feed, then (optionally) the expected state. */
export interface Step {
  readonly updates: readonly (Update | AnyUpdate)[];
  readonly expect: State;
}

export interface Expander {
  readonly name: string;
  expand(states: readonly State[]): Step[][];
}

function toSteps(states: readonly State[]): Step[] {
  let prev = emptyState;
  return states.map((s) => {
    const step = { updates: kvDeltas(prev, s), expect: s };
    prev = s;
    return step;
  });
}

export const expanders: readonly Expander[] = [
  { name: 'identity', expand: (states) => [toSteps(states)] },
  { name: 'reverseStateOrder', expand: (states) => (states.length < 2 ? [] : [toSteps([...states].reverse())]) },
  {
    name: 'reverseKVOrder',
    expand: (states) => [toSteps(states.map((s) => ({ ...s, kvs: [...s.kvs].reverse() })))],
  },
  {
    name: 'insertEmpties',
    expand: (states) => [toSteps(states.flatMap((s, i) => (i === 0 ? [s] : [emptyState, s])))],
  },
  { name: 'splitStates', expand: (states) => states.map((s) => toSteps([s])) },
  {
    name: 'squashStates',
    expand: (states) => {
      const steps = toSteps(states);
      const last = steps[steps.length - 1];
      if (last === undefined) return [];
      return [[{ updates: steps.flatMap((s) => s.updates), expect: last.expect }]];
    },
  },
];

export type FlushStrategy = 'afterEveryKV' | 'afterEveryKVTwice' | 'oncePerState' | 'onlyAtEnd';
export const flushStrategies: readonly FlushStrategy[] = ['afterEveryKV', 'afterEveryKVTwice', 'oncePerState', 'onlyAtEnd'];
