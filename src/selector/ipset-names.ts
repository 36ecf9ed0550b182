/**
 * IP set identities and kernel set names (calico-semantics §1.7).
 *
 * - A selector's IP set ID is its unique ID (`s:…`).
 * - A named-port set ID is `MakeUniqueID("n", selUID + "," + proto + "," + portName)`
 *   (Felix: `IPSetData.UniqueID()` in `felix/calc/rule_scanner.go`).
 * - The kernel name is `"cali" + family + "0" + setID`, cut to 31 characters
 *   (Felix: `felix/ipsets/ipset_defs.go`, `MaxIPSetNameLength = 31`; the `0` marks a main
 *   set, temporary swap sets use `t`).
 */
import type { Selector } from './selector.ts';
import { makeUniqueId } from './unique-id.ts';

/** Felix: ipsets.MaxIPSetNameLength = 31 (the kernel's IPSET_MAXNAMELEN minus the NUL). */
export const MAX_IPSET_NAME_LENGTH = 31;

/** Protocols a named-port IP set can be scoped to; `any` when the rule names none. */
export type NamedPortProtocol = 'tcp' | 'udp' | 'sctp' | 'any';

/** Kernel name of the main IP set for `setId`, e.g. `cali40s:5y5I3VdRZfDU01O--xXAPx2`. */
export function ipSetName(setId: string, ipVersion: 4 | 6): string {
  if (ipVersion !== 4 && ipVersion !== 6) {
    throw new RangeError(`ipSetName: ipVersion must be 4 or 6, got ${String(ipVersion)}`);
  }
  return `cali${ipVersion}0${setId}`.slice(0, MAX_IPSET_NAME_LENGTH);
}

/** ID of the named-port IP set for endpoints matching `selector` with port `portName`. */
export function namedPortIpSetId(selector: Selector, protocol: NamedPortProtocol, portName: string): string {
  return makeUniqueId('n', `${selector.uniqueId()},${protocol},${portName}`);
}
