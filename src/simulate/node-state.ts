/**
 * `NodeState`: one node's dataplane as the calc graph describes it — the accumulated
 * `proto` output (IP sets with members, active policies and profiles, local workload and host
 * endpoints).
 *
 * It is what the agent's dataplane driver would be told, kept as maps so the verdict engine
 * can evaluate it. Guarantees:
 * - applying the same message stream as the agent yields the same state (full updates
 *   replace, deltas add/remove, removes delete);
 * - IP-set membership is answered from prepared lookups (`hasNet`, `hasIpPort`), which are
 *   rebuilt lazily after a change, so a matrix of a million verdicts does set lookups only.
 */
import { cidrContains, parseCidr, type ParsedCidr } from '../api/index.ts';
import {
  hostEndpointIdKey,
  policyIdKey,
  workloadEndpointIdKey,
  type DataplaneMessage,
  type HostEndpoint,
  type HostEndpointId,
  type IpSetType,
  type Policy,
  type PolicyId,
  type Profile,
  type WorkloadEndpoint,
  type WorkloadEndpointId,
} from '../proto/index.ts';

interface IpSetEntry {
  readonly type: IpSetType;
  readonly members: Set<string>;
  /** hash:net members wider than one address, parsed once (rebuilt on change). */
  wide?: ParsedCidr[];
}

export class NodeState {
  readonly nodeName: string;
  readonly ipSets = new Map<string, IpSetEntry>();
  readonly policies = new Map<string, { readonly id: PolicyId; readonly policy: Policy }>();
  readonly profiles = new Map<string, Profile>();
  readonly endpoints = new Map<string, { readonly id: WorkloadEndpointId; readonly endpoint: WorkloadEndpoint }>();
  /** This node's host endpoints (`HostEndpointUpdate`), by name. */
  readonly hostEndpoints = new Map<string, { readonly id: HostEndpointId; readonly endpoint: HostEndpoint }>();

  constructor(nodeName: string) {
    this.nodeName = nodeName;
  }

  apply(messages: readonly DataplaneMessage[]): void {
    for (const m of messages) {
      switch (m.type) {
        case 'IPSetUpdate':
          this.ipSets.set(m.id, { type: m.ipsetType, members: new Set(m.members) });
          break;
        case 'IPSetDeltaUpdate': {
          const s = this.ipSets.get(m.id);
          if (s === undefined) break;
          for (const r of m.removed) s.members.delete(r);
          for (const a of m.added) s.members.add(a);
          delete s.wide;
          break;
        }
        case 'IPSetRemove':
          this.ipSets.delete(m.id);
          break;
        case 'ActivePolicyUpdate':
          this.policies.set(policyIdKey(m.id), { id: m.id, policy: m.policy });
          break;
        case 'ActivePolicyRemove':
          this.policies.delete(policyIdKey(m.id));
          break;
        case 'ActiveProfileUpdate':
          this.profiles.set(m.id.name, m.profile);
          break;
        case 'ActiveProfileRemove':
          this.profiles.delete(m.id.name);
          break;
        case 'WorkloadEndpointUpdate':
          this.endpoints.set(workloadEndpointIdKey(m.id), { id: m.id, endpoint: m.endpoint });
          break;
        case 'WorkloadEndpointRemove':
          this.endpoints.delete(workloadEndpointIdKey(m.id));
          break;
        case 'HostEndpointUpdate':
          this.hostEndpoints.set(hostEndpointIdKey(m.id), { id: m.id, endpoint: m.endpoint });
          break;
        case 'HostEndpointRemove':
          this.hostEndpoints.delete(hostEndpointIdKey(m.id));
          break;
        case 'InSync':
          break;
      }
    }
  }

  /**
   * Whether the hash:net set `id` contains the host address `hostNet` (`10.0.0.1/32`), either
   * as a member or inside a wider member. Undefined when the set is not programmed.
   */
  hasNet(id: string, hostNet: string): boolean | undefined {
    const s = this.ipSets.get(id);
    if (s === undefined) return undefined;
    if (s.members.has(hostNet)) return true;
    if (s.wide === undefined) {
      s.wide = [];
      for (const m of s.members) {
        const p = parseCidr(m);
        if (p.ok && p.value.prefixLength < (p.value.version === 4 ? 32 : 128)) s.wide.push(p.value);
      }
    }
    for (const w of s.wide) if (cidrContains(w, hostNet)) return true;
    return false;
  }

  /**
   * The ports `p` for which the hash:ip,port set `id` holds `<ipProto><p>` (`ipProto` is
   * `ip,proto:`). Undefined when the set is not programmed.
   */
  portsOf(id: string, ipProto: string): number[] | undefined {
    const s = this.ipSets.get(id);
    if (s === undefined) return undefined;
    const out: number[] = [];
    for (const m of s.members) if (m.startsWith(ipProto)) out.push(Number(m.slice(ipProto.length)));
    return out;
  }

  /** Whether the hash:ip,port set `id` holds `ip,proto:port`. Undefined when not programmed. */
  hasIpPort(id: string, member: string): boolean | undefined {
    const s = this.ipSets.get(id);
    return s === undefined ? undefined : s.members.has(member);
  }
}
