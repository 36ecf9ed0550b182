/**
 * Profiles generated from Namespaces and ServiceAccounts, as Calico's `NamespaceToProfile`
 * and `ServiceAccountToProfile` do (calico-semantics §2.2):
 *
 * - `kns.<ns>`: allow all ingress and egress (the last-resort rules for pods no policy
 *   selects), labelsToApply every namespace label as `pcns.<k>` plus
 *   `pcns.projectcalico.org/name: <ns>`.
 * - `ksa.<ns>.<sa>`: no rules, labelsToApply every SA label as `pcsa.<k>` plus
 *   `pcsa.projectcalico.org/name: <sa>`.
 *
 * The name label is set last, so a Namespace or ServiceAccount labelled
 * `projectcalico.org/name` cannot name itself otherwise. Nothing is left out for not being a
 * valid label: a ServiceAccount name may be 253 characters and a label key too long once
 * prefixed, and Calico hands both to Felix as they are; validation accepts them in a profile
 * (`checkProfileLabels`), so the profile is never dropped for them.
 */
import type { Profile } from '../api/types.ts';
import { API_VERSION, NAMESPACE_LABEL_PREFIX, NAMESPACE_PROFILE_PREFIX, SERVICE_ACCOUNT_LABEL_PREFIX } from '../api/types.ts';
import type { K8sMetaObject } from '../api/kubernetes.ts';

export { NAMESPACE_PROFILE_PREFIX };
export const SERVICE_ACCOUNT_PROFILE_PREFIX = 'ksa.';
const NAME_LABEL = 'projectcalico.org/name';

export function namespaceProfileName(ns: string): string {
  return `${NAMESPACE_PROFILE_PREFIX}${ns}`;
}

/** `ksa.<ns>.<sa>`; an empty namespace is `default` (Calico). */
export function serviceAccountProfileName(ns: string, sa: string): string {
  return `${SERVICE_ACCOUNT_PROFILE_PREFIX}${ns === '' ? 'default' : ns}.${sa}`;
}

/**
 * The source of a generated profile name: `{kind: 'namespace', name}` for `kns.`,
 * `{kind: 'serviceaccount', namespace, name}` for `ksa.` (namespaces are DNS labels, so the
 * first dot after the prefix ends the namespace), undefined for any other name.
 */
export function profileSource(
  profileName: string,
): { kind: 'namespace'; name: string } | { kind: 'serviceaccount'; namespace: string; name: string } | undefined {
  if (profileName.startsWith(NAMESPACE_PROFILE_PREFIX)) {
    const name = profileName.slice(NAMESPACE_PROFILE_PREFIX.length);
    return name === '' ? undefined : { kind: 'namespace', name };
  }
  if (profileName.startsWith(SERVICE_ACCOUNT_PROFILE_PREFIX)) {
    const rest = profileName.slice(SERVICE_ACCOUNT_PROFILE_PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot <= 0 || dot === rest.length - 1) return undefined;
    return { kind: 'serviceaccount', namespace: rest.slice(0, dot), name: rest.slice(dot + 1) };
  }
  return undefined;
}

function prefixed(prefix: string, labels: Record<string, string> | undefined, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {})) out[`${prefix}${k}`] = v;
  out[`${prefix}${NAME_LABEL}`] = name;
  return out;
}

export function namespaceToProfile(ns: K8sMetaObject): Profile {
  const name = ns.metadata?.name ?? '';
  return {
    apiVersion: API_VERSION,
    kind: 'Profile',
    metadata: { name: namespaceProfileName(name) },
    spec: {
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      labelsToApply: prefixed(NAMESPACE_LABEL_PREFIX, ns.metadata?.labels, name),
    },
  };
}

export function serviceAccountToProfile(sa: K8sMetaObject): Profile {
  const name = sa.metadata?.name ?? '';
  return {
    apiVersion: API_VERSION,
    kind: 'Profile',
    metadata: { name: serviceAccountProfileName(sa.metadata?.namespace ?? '', name) },
    spec: { labelsToApply: prefixed(SERVICE_ACCOUNT_LABEL_PREFIX, sa.metadata?.labels, name) },
  };
}
