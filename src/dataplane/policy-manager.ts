/**
 * ActivePolicyUpdate/Remove and ActiveProfileUpdate/Remove → `cali-pi-`/`cali-po-` and
 * `cali-pri-`/`cali-pro-` chains in the filter table of every IP family.
 *
 * - The calc graph sends only *active* policies and profiles (used by a local endpoint), but a
 *   policy may be used in one direction only: its chains are on-demand, so the table programs
 *   each only while an endpoint chain jumps to it (Felix programs only referenced chains).
 * - A policy that cannot be rendered (a value the renderer rejects) fails closed: its chains
 *   become a single DROP, and the error is logged with the policy's identity. A staged policy's
 *   chains become empty instead: they only count, and must never drop.
 * - Every chain carries its owner (policy or profile, and which of its rules each iptables
 *   rule came from), so a chain iptables-restore rejects is reported by name (the table
 *   programs it as a DROP meanwhile; see `iptables/rejected-chains.ts`).
 * - Rendering is lazy: a policy's or profile's chains are rendered together when the table first
 *   needs either's rules — for a write, while the restore streams — so a from-scratch program
 *   of many policies renders while iptables-restore parses (issue 18). What is rendered, and a
 *   render error's DROP and log line, are the same as rendering at once.
 * - As Felix does, every policy goes into the filter, mangle and raw tables, and every profile
 *   into filter and mangle: a table programs a chain only while one of its own chains jumps to
 *   it, so an untracked policy reaches only raw (a host endpoint's untracked chain), a preDNAT
 *   one only mangle, a normal one filter and — through a host endpoint's mangle egress chain —
 *   mangle. Rendering is per table (the mangle/raw renderer denies with DROP, logs no drop).
 */
import { isStagedPolicy, type DataplaneMessage, type PolicyId } from '../proto/index.ts';
import type { Logger } from '../runtime/logger.ts';
import { emptyPhases, timed, type PhaseTotals } from './apply-phases.ts';
import { DROP } from './action.ts';
import type { Chain, ChainOwner, ChainRule, LazyChain } from './chain.ts';
import { ANY } from './match.ts';
import { policyChainName, profileChainName } from './chain-names.ts';
import type { Manager } from './manager.ts';
import { RuleRenderError } from './match-builder.ts';
import type { RuleRenderer } from './rule-renderer.ts';
import type { Table } from './table.ts';

export interface FamilyTables {
  readonly renderer: RuleRenderer;
  readonly filter: Table;
  /**
   * The mangle and raw tables, where host endpoint chains jump to policies (preDNAT and normal
   * egress in mangle, untracked in raw), and the renderer of their policy chains: deny is DROP
   * (REJECT is a filter-table target) and there is no drop log (Felix logs no untracked policy).
   */
  readonly host?: { readonly renderer: RuleRenderer; readonly mangle: Table; readonly raw: Table };
}

export class PolicyManager implements Manager {
  private readonly log: Logger;

  /**
   * The renderer's time is added to `policyRenderMs` of the totals `phases` returns when it
   * runs (the apply's, when lazily rendered in one).
   */
  constructor(
    private readonly families: readonly FamilyTables[],
    logger: Logger,
    private readonly phases: () => PhaseTotals = emptyPhases,
  ) {
    this.log = logger.child({ component: 'policy-manager' });
  }

  /** Handles a policy or profile message (false for any other); `phases` overrides the constructor's. */
  onMessage(msg: DataplaneMessage, phases: () => PhaseTotals = this.phases): boolean {
    switch (msg.type) {
      case 'ActivePolicyUpdate': {
        const { id, policy } = msg;
        const owner = { kind: id.kind, namespace: id.namespace, name: id.name, tier: id.tier };
        const names = [policyChainName(id, 'ingress'), policyChainName(id, 'egress')];
        for (const { renderer, tables } of this.targets()) {
          for (const t of tables) program(t, names, () => this.renderOrDrop(names, () => timed(phases(), 'policyRenderMs', () => renderer.policyChains(id, policy)), logFields(id), isStagedPolicy(id)), owner);
        }
        return true;
      }
      case 'ActivePolicyRemove':
        for (const { tables } of this.targets()) {
          for (const t of tables) {
            t.removeChain(policyChainName(msg.id, 'ingress'));
            t.removeChain(policyChainName(msg.id, 'egress'));
          }
        }
        return true;
      case 'ActiveProfileUpdate': {
        const { id, profile } = msg;
        const names = [profileChainName(id.name, 'ingress'), profileChainName(id.name, 'egress')];
        for (const { renderer, tables } of this.targets(false)) {
          for (const t of tables) program(t, names, () => this.renderOrDrop(names, () => timed(phases(), 'policyRenderMs', () => renderer.profileChains(id.name, profile)), { kind: 'Profile', name: id.name }), { kind: 'Profile', name: id.name });
        }
        return true;
      }
      case 'ActiveProfileRemove':
        for (const { tables } of this.targets(false)) {
          for (const t of tables) {
            t.removeChain(profileChainName(msg.id.name, 'ingress'));
            t.removeChain(profileChainName(msg.id.name, 'egress'));
          }
        }
        return true;
      default:
        return false;
    }
  }

  /** Each renderer with the tables its chains go to (`raw`: with the raw tables, for policies). */
  private *targets(raw = true): Iterable<{ renderer: RuleRenderer; tables: readonly Table[] }> {
    for (const f of this.families) {
      yield { renderer: f.renderer, tables: [f.filter] };
      if (f.host !== undefined) yield { renderer: f.host.renderer, tables: raw ? [f.host.mangle, f.host.raw] : [f.host.mangle] };
    }
  }

  /** Nothing is deferred: chains render lazily, when the table first needs their rules. */
  async completeDeferredWork(): Promise<void> {}

  private renderOrDrop(names: readonly string[], render: () => Chain[], fields: Record<string, string | undefined>, staged = false): Chain[] {
    try {
      return render();
    } catch (e) {
      if (!(e instanceof RuleRenderError)) throw e;
      if (staged) {
        // A staged policy only counts: without its rules it counts nothing, and drops nothing.
        this.log.error({ ...fields, err: e.message }, 'cannot render the rules of a staged policy; it counts nothing');
        return names.map((name) => ({ name, rules: [] }));
      }
      this.log.error({ ...fields, err: e.message }, 'cannot render rules; dropping all traffic this policy governs');
      return names.map((name) => ({ name, rules: [{ match: ANY, action: DROP, comments: ['Tessera: rules could not be rendered'] }] }));
    }
  }
}

/**
 * Hands the `[ingress, egress]` chains `render` produces to the table: lazily (both rendered at
 * the first need of either), on demand (programmed only while an endpoint chain refers to
 * them), each with its owner.
 */
function program(filter: Table, names: readonly string[], render: () => Chain[], owner: Omit<ChainOwner, 'ruleOf'>): void {
  const pair = new LazyPair(render);
  for (let i = 0; i < names.length; i++) {
    const chain = new LazyPairChain(names[i]!, pair, i);
    filter.updateChain(chain, { onDemand: true, owner: new PolicyChainOwner(owner, chain) });
  }
}

/*
 * Objects with methods rather than closures: a message makes five per table, and a closure
 * assigned to a name is renamed one by one by the test and bench loader (esbuild's keepNames),
 * which made message handling several times slower at 1,000 policies.
 */

/** A policy's or profile's `[ingress, egress]` chains for one table, rendered together on first use. */
class LazyPair {
  private chains: Chain[] | undefined;
  constructor(private render: (() => Chain[]) | undefined) {}

  rules(i: number): readonly ChainRule[] {
    if (this.chains === undefined) {
      this.chains = this.render!();
      this.render = undefined;
    }
    return this.chains[i]!.rules;
  }
}

/** Chain `i` of a `LazyPair`. */
class LazyPairChain implements LazyChain {
  constructor(
    readonly name: string,
    private readonly pair: LazyPair,
    private readonly index: number,
  ) {}

  get direction(): 'ingress' | 'egress' {
    return this.index === 0 ? 'ingress' : 'egress';
  }

  render(): readonly ChainRule[] {
    return this.pair.rules(this.index);
  }
}

/** The owner of a policy or profile chain, naming the owner's rule an iptables rule came from. */
class PolicyChainOwner implements ChainOwner {
  readonly kind: string;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly tier: string | undefined;

  constructor(
    owner: Omit<ChainOwner, 'ruleOf'>,
    private readonly chain: LazyPairChain,
  ) {
    this.kind = owner.kind;
    this.namespace = owner.namespace;
    this.name = owner.name;
    this.tier = owner.tier;
  }

  ruleOf(index: number): string | undefined {
    return ownerRuleOf(this.chain.direction, this.chain.render(), index);
  }
}

/**
 * The owner's rule that iptables rule `index` belongs to, as `ingress[2] (rule <id>)`: the
 * renderer ends each owner rule's iptables rules with the one tagged with its index (and
 * carrying its `rule <id>` comment), so it is the first tagged rule at or after `index`.
 * Undefined when none is. Reads the chain's own rules, which the table keeps anyway.
 */
function ownerRuleOf(dir: 'ingress' | 'egress', rules: readonly ChainRule[], index: number): string | undefined {
  for (let j = index; j < rules.length; j++) {
    const tag = rules[j]!.tag;
    if (tag?.kind !== 'rule') continue;
    const id = rules[j]!.comments?.find((c) => c.startsWith('rule '));
    return id === undefined ? `${dir}[${tag.index}]` : `${dir}[${tag.index}] (${id})`;
  }
  return undefined;
}

function logFields(id: PolicyId): Record<string, string | undefined> {
  return { kind: id.kind, namespace: id.namespace, name: id.name, tier: id.tier };
}
