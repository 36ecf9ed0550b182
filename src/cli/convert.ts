/**
 * `tessera convert -f <file|dir>... [--output yaml|json]`: prints the Calico policy
 * (`knp.default.<name>`) the controllers would write for each Kubernetes NetworkPolicy.
 *
 * Objects read from files have not been through the apiserver, so its defaulting is
 * applied first (`SetDefaults_NetworkPolicy`: empty `policyTypes` → `[Ingress]`, plus
 * `Egress` when `spec.egress` is non-empty; calico-semantics §3.2). Documents of other
 * kinds are skipped with a note on stderr. Dropped rules are reported on stderr as
 * `NetworkPolicy ns/name: spec.ingress[0]: reason`. Exit status: 0 when every rule
 * converted, 1 when a rule was dropped or an input could not be read, 2 on a usage error.
 */
import { parseInputArgs, UsageError } from './args.ts';
import { stringify } from 'yaml';

import { convertNetworkPolicy, type K8sNetworkPolicy } from '../controllers/policy-converter.ts';
import { describeManifestSource, isManifestProblem, readManifests } from '../runtime/manifest-files.ts';

export interface ConvertOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

const processOutput: ConvertOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

const USAGE = `usage: tessera convert -f <file|dir> [-f <file|dir>...] [--output yaml|json]

Prints the projectcalico.org/v3 NetworkPolicy (knp.default.<name>) that Tessera's
controllers write for each networking.k8s.io/v1 NetworkPolicy in the input.
`;

function parseArgs(argv: readonly string[]): { paths: string[]; output: 'yaml' | 'json' } | 'help' {
  return parseInputArgs(argv, ['yaml', 'json'] as const, 'yaml');
}

/** The apiserver's `SetDefaults_NetworkPolicy`, for objects that never went through it. */
export function defaultK8sPolicyTypes(np: K8sNetworkPolicy): K8sNetworkPolicy {
  const spec = np.spec ?? {};
  if ((spec.policyTypes ?? []).length > 0) return np;
  const policyTypes = ['Ingress', ...((spec.egress ?? []).length > 0 ? ['Egress'] : [])];
  return { ...np, spec: { ...spec, policyTypes } };
}

function isK8sNetworkPolicy(v: unknown): v is K8sNetworkPolicy {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { apiVersion?: unknown; kind?: unknown };
  return o.apiVersion === 'networking.k8s.io/v1' && o.kind === 'NetworkPolicy';
}

export async function runConvert(argv: readonly string[], out: ConvertOutput = processOutput): Promise<number> {
  let opts;
  try {
    opts = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    out.stderr(`tessera convert: ${err.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    out.stdout(USAGE);
    return 0;
  }
  let failed = false;
  const policies: unknown[] = [];
  for (const entry of await readManifests(opts.paths)) {
    if (isManifestProblem(entry)) {
      out.stderr(`${describeManifestSource(entry.source)}: ${entry.reason}\n`);
      failed = true;
      continue;
    }
    if (!isK8sNetworkPolicy(entry.value)) {
      const o = entry.value as { kind?: unknown } | null;
      out.stderr(`skipped ${describeManifestSource(entry.source)}: not a networking.k8s.io/v1 NetworkPolicy (kind ${String(o?.kind ?? 'unknown')})\n`);
      continue;
    }
    const k8s = defaultK8sPolicyTypes(entry.value);
    const { policy, errors, warnings } = convertNetworkPolicy(k8s);
    const name = `NetworkPolicy ${k8s.metadata?.namespace ?? 'default'}/${k8s.metadata?.name ?? ''}`;
    for (const e of errors) out.stderr(`${name}: spec.${e.direction}[${e.index}]: rule dropped: ${e.reason}\n`);
    for (const w of warnings) out.stderr(`warning: ${name}: ${w}\n`);
    if (errors.length > 0) failed = true;
    policies.push(policy);
  }
  if (opts.output === 'json') {
    const doc = policies.length === 1 ? policies[0] : { apiVersion: 'v1', kind: 'List', items: policies };
    out.stdout(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    out.stdout(policies.map((p) => stringify(p)).join('---\n'));
  }
  return failed ? 1 : 0;
}
