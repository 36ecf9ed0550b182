/**
 * `IPSetData`: what an IP set contains, as the rule scanner asks for it and the member
 * index fills it (Felix: `IPSetData` in `calc/rule_scanner.go`, calico-semantics §1.7).
 *
 * Identity is `id`: the selector's unique id for a selector set, or
 * `MakeUniqueID("n", selUID + "," + proto + "," + portName)` for a named-port set, so two
 * rules that mean the same set share it.
 */
import type { IpSetType } from '../proto/index.ts';
import { namedPortIpSetId, type NamedPortProtocol, type Selector } from '../selector/index.ts';

export interface IPSetData {
  readonly id: string;
  readonly selector: Selector;
  /** Set for named-port sets (`hash:ip,port`). */
  readonly namedPort?: { readonly protocol: NamedPortProtocol; readonly name: string };
  readonly type: IpSetType;
}

export function selectorIPSet(selector: Selector): IPSetData {
  return { id: selector.uniqueId(), selector, type: 'hash:net' };
}

export function namedPortIPSet(selector: Selector, protocol: NamedPortProtocol, name: string): IPSetData {
  return { id: namedPortIpSetId(selector, protocol, name), selector, namedPort: { protocol, name }, type: 'hash:ip,port' };
}
