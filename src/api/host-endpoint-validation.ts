/**
 * `spec` of a HostEndpoint, checked as Calico checks it (libcalico-go validator.go
 * `validateHostEndpointSpec` and the field tags of api/pkg/apis/projectcalico/v3/hostendpoint.go,
 * v3.28; the CEL rules of Calico's later CRDs say the same):
 *
 * - `node`: required ("no node has been specified") and a name (DNS-1123 subdomain);
 * - `interfaceName`: empty, `*`, or an interface name (`interfaceRegex`);
 * - at least one of `interfaceName` and `expectedIPs` ("no interface or expected IPs have been
 *   specified", reported at `spec.interfaceName` as Calico reports it);
 * - `expectedIPs`: IPv4 or IPv6 addresses, not networks (`ip`, Go's net.ParseIP);
 * - `profiles`: names (DNS-1123 subdomains);
 * - `ports[]`: each with a Kubernetes port name (`portName`), a protocol that has ports
 *   (`SupportsPorts`: TCP, UDP, SCTP or 6, 17, 132; names case-sensitive) and a port 1–65535.
 *   Names may repeat (validator_test "should accept HostEndpointSpec with name-clashing ports").
 *
 * `expectedIPs` and `profiles` are `set` lists in the CRD (as in Calico's), so the apiserver
 * rejects an entry listed twice; so does this check, to agree with admission.
 */
import { parseIP } from './cidr.ts';
import { fieldPath, indexPath } from './field-error.ts';
import type { FieldErrorCollector } from './field-error.ts';
import { isDns1123Subdomain, isValidEndpointPortName, isValidInterfaceName } from './names.ts';
import { parseProtocol, supportsPorts } from './protocol.ts';
import { HOST_ENDPOINT_PORT_SHAPE, SPEC_SHAPES } from './schema-fields.ts';
import { expectArray, expectString, isAbsent } from './shape.ts';

export function checkHostEndpointSpec(c: FieldErrorCollector, spec: Record<string, unknown>): void {
  SPEC_SHAPES.HostEndpoint.checkFields(c, 'spec', spec);

  const node = spec['node'];
  if (isAbsent(node) || node === '') c.error('spec.node', 'no node has been specified');
  else if (expectString(c, 'spec.node', node) && !isDns1123Subdomain(node)) {
    c.error('spec.node', `${JSON.stringify(node)} is not a valid node name (DNS-1123 subdomain)`);
  }

  const iface = spec['interfaceName'];
  const hasInterface = !isAbsent(iface) && iface !== '';
  if (hasInterface && expectString(c, 'spec.interfaceName', iface) && iface !== '*' && !isValidInterfaceName(iface)) {
    c.error('spec.interfaceName', `${JSON.stringify(iface)} is not a valid interface name (use "*", or 1-15 of alphanumerics, '_', '.' and '-')`);
  }

  const ips = spec['expectedIPs'];
  let hasIPs = false;
  if (!isAbsent(ips) && expectArray(c, 'spec.expectedIPs', ips)) {
    hasIPs = ips.length > 0;
    eachUnique(c, 'spec.expectedIPs', ips, (at, ip) => {
      const result = parseIP(ip);
      if (!result.ok) c.error(at, result.message);
    });
  }
  if (!hasInterface && !hasIPs) c.error('spec.interfaceName', 'no interface or expected IPs have been specified');

  const profiles = spec['profiles'];
  if (!isAbsent(profiles) && expectArray(c, 'spec.profiles', profiles)) {
    eachUnique(c, 'spec.profiles', profiles, (at, p) => {
      if (expectString(c, at, p) && !isDns1123Subdomain(p)) c.error(at, `${JSON.stringify(p)} is not a valid profile name (DNS-1123 subdomain)`);
    });
  }

  const ports = spec['ports'];
  if (!isAbsent(ports) && expectArray(c, 'spec.ports', ports)) {
    ports.forEach((p, i) => checkHostEndpointPort(c, indexPath('spec.ports', i), p));
  }
}

/** Calls `check` on each entry, and reports one equal (===) to an earlier entry as repeated. */
function eachUnique(c: FieldErrorCollector, path: string, list: readonly unknown[], check: (at: string, v: unknown) => void): void {
  const seen = new Set<unknown>();
  list.forEach((v, i) => {
    const at = indexPath(path, i);
    check(at, v);
    if (seen.has(v)) c.error(at, `${JSON.stringify(v)} is listed more than once`);
    seen.add(v);
  });
}

function checkHostEndpointPort(c: FieldErrorCollector, path: string, port: unknown): void {
  if (!HOST_ENDPOINT_PORT_SHAPE.check(c, path, port)) return;
  const name = port['name'];
  const namePath = fieldPath(path, 'name');
  if (isAbsent(name) || name === '') c.error(namePath, 'name is required (a Kubernetes port name)');
  else if (expectString(c, namePath, name) && !isValidEndpointPortName(name)) {
    c.error(namePath, `${JSON.stringify(name)} is not a valid port name (1-15 of lower-case letters, digits and '-', with at least one letter)`);
  }

  const protocol = port['protocol'];
  const protocolPath = fieldPath(path, 'protocol');
  if (isAbsent(protocol) || protocol === '') c.error(protocolPath, 'protocol is required (TCP, UDP or SCTP)');
  else {
    const result = parseProtocol(protocol);
    if (!result.ok) c.error(protocolPath, result.message);
    else if (!supportsPorts(result.value)) c.error(protocolPath, `${JSON.stringify(protocol)} does not have ports (use TCP, UDP or SCTP)`);
  }

  const number = port['port'];
  const portPath = fieldPath(path, 'port');
  if (isAbsent(number) || number === 0) c.error(portPath, 'port is required (1-65535)');
  else if (typeof number !== 'number' || !Number.isInteger(number) || number < 1 || number > 65535) {
    c.error(portPath, `port must be an integer 1-65535, not ${JSON.stringify(number)}`);
  }
}
