/**
 * `IPSetData`: what an IP set contains, as the rule scanner asks for it and the member
 * indexes fill it (Felix: `IPSetData` in `calc/rule_scanner.go`, calico-semantics §1.7).
 *
 * Identity is `id`: the selector's unique id for a selector set,
 * `MakeUniqueID("n", selUID + "," + proto + "," + portName)` for a named-port set, and
 * `MakeUniqueID("svc", "<ns>/<name>")` / `MakeUniqueID("svcnoport", "<ns>/<name>")` for a
 * Service's set with and without ports (reference §D.3), so two rules that mean the same set
 * share it. A selector set is filled by the IP-set member index, a Service's by the service
 * index (service-index.ts): `service` tells them apart.
 */
import type { IpSetType } from '../proto/index.ts';
import { makeUniqueId, namedPortIpSetId, type NamedPortProtocol, type Selector } from '../selector/index.ts';

/** A set of the endpoints (and network sets) a selector matches. */
export interface SelectorIPSetData {
  readonly id: string;
  readonly selector: Selector;
  /** Set for named-port sets (`hash:ip,port`). */
  readonly namedPort?: { readonly protocol: NamedPortProtocol; readonly name: string };
  readonly type: IpSetType;
  readonly service?: undefined;
}

/**
 * A set of a Service's endpoints, from its EndpointSlices: `ip,proto:port` members
 * (`hash:ip,port`, a destination match) when `includePorts`, else host CIDRs (`hash:net`, a
 * source match).
 */
export interface ServiceIPSetData {
  readonly id: string;
  /** `<namespace>/<name>`. */
  readonly service: string;
  readonly includePorts: boolean;
  readonly type: IpSetType;
  readonly selector?: undefined;
  readonly namedPort?: undefined;
}

export type IPSetData = SelectorIPSetData | ServiceIPSetData;

export function selectorIPSet(selector: Selector): SelectorIPSetData {
  return { id: selector.uniqueId(), selector, type: 'hash:net' };
}

export function namedPortIPSet(selector: Selector, protocol: NamedPortProtocol, name: string): SelectorIPSetData {
  return { id: namedPortIpSetId(selector, protocol, name), selector, namedPort: { protocol, name }, type: 'hash:ip,port' };
}

/** Felix's `svc:` (ports, destination) or `svcnoport:` (addresses, source) set of `service` (`<ns>/<name>`). */
export function serviceIPSet(service: string, includePorts: boolean): ServiceIPSetData {
  return includePorts
    ? { id: makeUniqueId('svc', service), service, includePorts, type: 'hash:ip,port' }
    : { id: makeUniqueId('svcnoport', service), service, includePorts, type: 'hash:net' };
}
