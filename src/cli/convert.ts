/**
 * `tessera convert -f <file|dir>... [--output yaml|json]`: prints the Calico policy
 * (`knp.default.<name>`) the controllers would write for each Kubernetes NetworkPolicy.
 *
 * Objects read from files have not been through the apiserver, so its defaulting is
 * applied first (`SetDefaults_NetworkPolicy`: empty `policyTypes` → `[Ingress]`, plus
 * `Egress` when `spec.egress` is non-empty; calico-semantics §3.2). Documents of other
 * kinds are skipped with a note on stderr. Dropped rules are reported on stderr as
 * `NetworkPolicy ns/name: spec.ingress[0]: reason`. A policy whose conversion is invalid
 * (validation.ts: e.g. a label key that is no selector, no name) is an input error naming
 * it and the converted field, or with `--skip-invalid` a note. Exit status
 * (exit-status.ts): 0 when every rule converted, 1 when a rule was dropped, 2 on a usage
 * error, 3 when an input cannot be read or parsed or a policy is invalid (nothing is
 * printed on stdout then).
 */
import { processOutput, readCommandLine, usage, type CliOutput } from './args.ts';
import { inputFlags, parseInputArgs } from './input-flags.ts';
import { stringify } from 'yaml';

import { applyDefaults, isError, validateResource } from '../api/index.ts';
import { convertNetworkPolicy } from '../convert/policy-converter.ts';
import { fileProblem, InputError, type InputProblem } from '../runtime/input-error.ts';
import { describeManifestSource, isManifestProblem, readManifests } from '../runtime/manifest-files.ts';
import { EXIT_FAILED, reportInputError } from './exit-status.ts';
import type { K8sNetworkPolicy } from '../api/index.ts';

const FLAGS = inputFlags(['yaml', 'json'] as const, 'yaml', 'leave out policies whose conversion is invalid (a note each on stderr)');

const USAGE = usage(
  {
    synopsis: 'tessera convert -f <file|dir> [-f <file|dir>...] [--output yaml|json] [--skip-invalid]',
    about: `Prints the projectcalico.org/v3 NetworkPolicy (knp.default.<name>) that Tessera's
controllers write for each networking.k8s.io/v1 NetworkPolicy in the input.`,
    footer: `Exit status: 0 every rule converted; 1 a rule was dropped (named on stderr); 2 usage error;
3 input not usable — an unreadable file or directory, a YAML syntax error
(file:line:column), a policy whose conversion is invalid without --skip-invalid. The
reason is on stderr and nothing is printed on stdout.`,
  },
  FLAGS,
);

function parseArgs(argv: readonly string[]): { paths: string[]; output: 'yaml' | 'json'; skipInvalid: boolean } | 'help' {
  return parseInputArgs(argv, FLAGS);
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

export async function runConvert(argv: readonly string[], out: CliOutput = processOutput): Promise<number> {
  const line = readCommandLine('convert', USAGE, () => parseArgs(argv), out);
  if ('exitCode' in line) return line.exitCode;
  const opts = line.options;
  let dropped = false;
  const problems: InputProblem[] = [];
  const policies: unknown[] = [];
  for (const entry of await readManifests(opts.paths)) {
    if (isManifestProblem(entry)) {
      problems.push(fileProblem(entry));
      continue;
    }
    if (!isK8sNetworkPolicy(entry.value)) {
      const o = entry.value as { kind?: unknown } | null;
      out.stderr(`note: ${describeManifestSource(entry.source)}: skipped: not a networking.k8s.io/v1 NetworkPolicy (kind ${String(o?.kind ?? 'unknown')})\n`);
      continue;
    }
    const k8s = defaultK8sPolicyTypes(entry.value);
    const { policy, errors, warnings } = convertNetworkPolicy(k8s);
    const name = `NetworkPolicy ${k8s.metadata?.namespace ?? 'default'}/${k8s.metadata?.name ?? ''}`;
    // What the controllers would write and every agent drop (update-processor.ts): invalid.
    const invalid = validateResource(applyDefaults(policy)).filter(isError);
    if (invalid.length > 0) {
      const object = `${name} (as ${policy.metadata.name})`;
      if (opts.skipInvalid) {
        out.stderr(`note: ${object}: invalid, skipped: ${invalid.map((e) => `${e.path}: ${e.message}`).join('; ')}\n`);
      } else {
        const source = describeManifestSource(entry.source);
        problems.push(...invalid.map((e): InputProblem => ({ type: 'object', object, source, path: e.path, reason: e.message })));
      }
      continue;
    }
    for (const e of errors) out.stderr(`${name}: spec.${e.direction}[${e.index}]: rule dropped: ${e.reason}\n`);
    for (const w of warnings) out.stderr(`warning: ${name}: ${w}\n`);
    if (errors.length > 0) dropped = true;
    policies.push(policy);
  }
  if (problems.length > 0) return reportInputError('convert', new InputError(problems), out);
  if (opts.output === 'json') {
    const doc = policies.length === 1 ? policies[0] : { apiVersion: 'v1', kind: 'List', items: policies };
    out.stdout(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    out.stdout(policies.map((p) => stringify(p)).join('---\n'));
  }
  return dropped ? EXIT_FAILED : 0;
}
