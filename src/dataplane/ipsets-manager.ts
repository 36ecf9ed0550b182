/**
 * IPSetUpdate / IPSetDeltaUpdate / IPSetRemove → desired IP sets, one `IpSets` per IP family.
 * A set's members are split by family: IPv4 members go to `cali40…`, IPv6 members to
 * `cali60…` (Felix runs one ipsets manager per family the same way).
 */
import type { DataplaneMessage } from '../proto/index.ts';
import type { IpSetsDataplane } from './ip-sets-dataplane.ts';
import type { Manager } from './manager.ts';

export class IpSetsManager implements Manager {
  constructor(private readonly families: readonly IpSetsDataplane[]) {}

  /** Applies one message to the desired state; returns false for messages it does not handle. */
  onMessage(msg: DataplaneMessage): boolean {
    switch (msg.type) {
      case 'IPSetUpdate':
        for (const f of this.families) f.replaceMembers(msg.id, msg.ipsetType, msg.members);
        return true;
      case 'IPSetDeltaUpdate':
        for (const f of this.families) {
          f.removeMembers(msg.id, msg.removed);
          f.addMembers(msg.id, msg.added);
        }
        return true;
      case 'IPSetRemove':
        for (const f of this.families) f.removeSet(msg.id);
        return true;
      default:
        return false;
    }
  }

  /** Nothing is deferred: the IP sets write themselves in the apply. */
  async completeDeferredWork(): Promise<void> {}
}
