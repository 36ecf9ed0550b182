/**
 * The HTTP (application-layer) match on a rule: accepted, checked like Calico checks it,
 * and reported as unsupported.
 *
 * Calico enforces `http` only through its L7 proxy (Dikastes/Envoy). Tessera programs
 * iptables alone, so it cannot match methods or paths; a rule with `http` is kept (so the
 * manifests of an existing cluster load) and every such rule gets a warning. The Calico
 * rules still apply, because a manifest Tessera accepts should also be one Calico accepts:
 * - `methods` has no duplicates; `paths` entries set exactly one of `exact` / `prefix`,
 *   starting with '/' and free of '?', '#' and spaces (validator.go `validateHTTPRule`);
 * - at most 20 methods and 20 paths, each path ≤ 1024 characters (CRD limits);
 * - the rule's protocol is TCP or unset, its action is Allow, and it is not an egress rule
 *   of a policy (CEL rules on Rule; `validateNetworkPolicySpec`).
 */
import { fieldPath, indexPath } from './field-error.ts';
import type { FieldErrorCollector } from './field-error.ts';
import type { Protocol } from './protocol.ts';
import { HTTP_PATH_SHAPE, HTTP_SHAPE } from './schema-fields.ts';
import { MAX_HTTP_ITEMS, MAX_HTTP_PATH_LENGTH } from './schema-rule.ts';
import { expectArray, expectString, isAbsent } from './shape.ts';

export const HTTP_UNSUPPORTED_MESSAGE =
  'HTTP match is not enforced by Tessera (no application-layer policy); the rule matches as if http were absent';

export interface HTTPRuleContext {
  /** The rule's action, if it is a valid one. */
  readonly action: string | undefined;
  /** The rule's parsed protocol; undefined when absent or invalid. */
  readonly protocol: Protocol | undefined;
  /** True for an egress rule of a NetworkPolicy or GlobalNetworkPolicy. */
  readonly inPolicyEgress: boolean;
}

/** Checks `rule.http` at `path` (the `http` field's own path). */
export function checkHTTPMatch(c: FieldErrorCollector, path: string, value: unknown, rule: HTTPRuleContext): void {
  if (isAbsent(value) || !HTTP_SHAPE.check(c, path, value)) return;

  const methods = value['methods'];
  const methodsPath = fieldPath(path, 'methods');
  if (!isAbsent(methods) && expectArray(c, methodsPath, methods, MAX_HTTP_ITEMS)) {
    const seen = new Set<string>();
    methods.forEach((m, i) => {
      if (!expectString(c, indexPath(methodsPath, i), m)) return;
      if (seen.has(m)) c.error(indexPath(methodsPath, i), `method ${JSON.stringify(m)} is listed more than once`);
      seen.add(m);
    });
  }

  const paths = value['paths'];
  const pathsPath = fieldPath(path, 'paths');
  if (!isAbsent(paths) && expectArray(c, pathsPath, paths, MAX_HTTP_ITEMS)) {
    paths.forEach((p, i) => checkHTTPPath(c, indexPath(pathsPath, i), p));
  }

  if (rule.protocol !== undefined && rule.protocol.number !== 6) {
    c.error(path, 'rules with HTTP match must have protocol TCP or unset');
  }
  if (rule.action !== undefined && rule.action !== 'Allow') {
    c.error(path, 'HTTP match is only valid on Allow rules');
  }
  if (rule.inPolicyEgress) c.error(path, 'HTTP match is not allowed in egress rules');
  c.warning(path, HTTP_UNSUPPORTED_MESSAGE);
}

function checkHTTPPath(c: FieldErrorCollector, path: string, value: unknown): void {
  if (!HTTP_PATH_SHAPE.check(c, path, value)) return;
  const exact = value['exact'];
  const prefix = value['prefix'];
  const given = [
    ['exact', exact],
    ['prefix', prefix],
  ].filter(([, v]) => !isAbsent(v) && v !== '') as [string, unknown][];
  if (given.length === 0) {
    c.error(path, "set one of 'exact' or 'prefix'");
    return;
  }
  if (given.length === 2) {
    c.error(path, "set only one of 'exact' and 'prefix'");
    return;
  }
  const [field, v] = given[0] as [string, unknown];
  const at = fieldPath(path, field);
  if (!expectString(c, at, v)) return;
  if (v.length > MAX_HTTP_PATH_LENGTH) c.error(at, `is longer than ${MAX_HTTP_PATH_LENGTH} characters`);
  if (!v.startsWith('/') || /[? #]/.test(v)) {
    c.error(at, `${JSON.stringify(v)} is not a valid path (must start with '/' and not contain '?', '#' or spaces)`);
  }
}
