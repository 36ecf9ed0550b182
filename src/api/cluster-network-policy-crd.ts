/**
 * The ClusterNetworkPolicy CustomResourceDefinition of each channel, built from the schema
 * declaration (cluster-network-policy-schema.ts) — never copied from upstream's YAML:
 * - `clusternetworkpolicies.policy.networking.k8s.io`, cluster scope, short name `cnp`;
 * - versions v1alpha2 (served) and v1beta1 (served, storage) with the same schema, so no
 *   conversion webhook (as v0.3.0: objects stored by a v0.2.0 CRD stay readable);
 * - upstream's annotations: the API-approval link the API server requires of a `*.k8s.io`
 *   group, `policy.networking.k8s.io/bundle-version: v0.3.0` and
 *   `policy.networking.k8s.io/channel` (the conformance suite reads both);
 * - upstream's printer columns (Tier, Priority, Age) and status subresource.
 *
 * crds/generate.ts writes the standard channel to crds/ (manifests/01-crds.yaml installs it) and
 * the experimental one to crds/experimental/ (manifests/experimental/ to opt in).
 */
import { CNP_BUNDLE_VERSION, CNP_KIND, CNP_SERVED_VERSIONS, CNP_STORAGE_VERSION, NETWORK_POLICY_API_GROUP } from './cluster-network-policy.ts';
import { clusterNetworkPolicySchema } from './cluster-network-policy-schema.ts';
import type { CnpChannel } from './cluster-network-policy-schema.ts';
import { toOpenApi } from './schema-openapi.ts';
import type { OpenApiNode } from './schema-openapi.ts';

export const CNP_PLURAL = 'clusternetworkpolicies';
export const CNP_CRD_NAME = `${CNP_PLURAL}.${NETWORK_POLICY_API_GROUP}`;
export const CNP_BUNDLE_VERSION_ANNOTATION = `${NETWORK_POLICY_API_GROUP}/bundle-version`;
export const CNP_CHANNEL_ANNOTATION = `${NETWORK_POLICY_API_GROUP}/channel`;
/** The API server refuses a CRD of a protected group (`*.k8s.io`) without an approval link. */
const API_APPROVED = { 'api-approved.kubernetes.io': 'https://github.com/kubernetes-sigs/network-policy-api/pull/347' };

const PRINTER_COLUMNS: readonly OpenApiNode[] = [
  { jsonPath: '.spec.tier', name: 'Tier', type: 'string' },
  { jsonPath: '.spec.priority', name: 'Priority', type: 'string' },
  { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
];

/** The CRD of `channel`: v1alpha2 then v1beta1 (storage), as upstream lists them. */
export function clusterNetworkPolicyCrd(channel: CnpChannel): OpenApiNode {
  const schema = toOpenApi(clusterNetworkPolicySchema(channel));
  // One schema for both versions; each version gets its own copy (the YAML stays alias-free).
  const versions = [...CNP_SERVED_VERSIONS].reverse().map((name) => ({
    additionalPrinterColumns: structuredClone(PRINTER_COLUMNS),
    name,
    schema: { openAPIV3Schema: structuredClone(schema) },
    served: true,
    storage: name === CNP_STORAGE_VERSION,
    subresources: { status: {} },
  }));
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      annotations: { ...API_APPROVED, [CNP_BUNDLE_VERSION_ANNOTATION]: CNP_BUNDLE_VERSION, [CNP_CHANNEL_ANNOTATION]: channel },
      name: CNP_CRD_NAME,
    },
    spec: {
      group: NETWORK_POLICY_API_GROUP,
      names: { kind: CNP_KIND, listKind: `${CNP_KIND}List`, plural: CNP_PLURAL, shortNames: ['cnp'], singular: CNP_KIND.toLowerCase() },
      scope: 'Cluster',
      versions,
    },
  };
}
