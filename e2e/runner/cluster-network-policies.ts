/**
 * ClusterNetworkPolicy objects in scenarios (`policy.networking.k8s.io`, any served version),
 * as both cluster runners apply them.
 *
 * - The CRD: scenarios may use the experimental channel's fields (egress `nodes`,
 *   `destinationNamedPort`), so before the first ClusterNetworkPolicy of a run the cluster makes
 *   the EXPERIMENTAL-channel CRD (manifests/experimental/clusternetworkpolicies.yaml) the served
 *   one, and waits until the API server serves it (Established, channel annotation
 *   `experimental`). manifests/ itself carries the standard channel, as a cluster admin installs
 *   it by default.
 * - Objects are written with `fieldValidation=Strict`: a field the served CRD does not know (a
 *   `nodes` peer against the standard channel) fails the scenario naming the object instead of
 *   being pruned into a peer with no field (which Tessera, as the API says, fails closed).
 * - Egress `nodes` peers match the addresses in the selected Nodes' `status.addresses`. The
 *   process runner writes each scenario node's `ip` there; a kind node's addresses are
 *   kubelet's and cannot be the scenario's, so a scenario that uses a `nodes` peer is probed,
 *   on kind, at the nodes' own InternalIPs (`ScenarioCluster.reportedNodeAddress`). Such a
 *   scenario therefore never names a node's `ip` in a policy.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';

import { isClusterNetworkPolicy, NETWORK_POLICY_API_GROUP, CNP_KIND } from '../../src/api/cluster-network-policy.ts';
import { pollUntil } from '../controlplane/index.ts';
import { REPO_ROOT } from './processes.ts';
import { stepsOf, type ManifestObject, type Scenario } from './scenario.ts';

const run = promisify(execFile);

/** The experimental-channel CRD (helper i30-api's generated manifest). */
export const CNP_EXPERIMENTAL_MANIFEST = join(REPO_ROOT, 'manifests', 'experimental', 'clusternetworkpolicies.yaml');
export const CNP_CRD_NAME = `clusternetworkpolicies.${NETWORK_POLICY_API_GROUP}`;
/** The annotation upstream's CRDs (and Tessera's) carry: `standard` or `experimental`. */
export const CNP_CHANNEL_ANNOTATION = `${NETWORK_POLICY_API_GROUP}/channel`;

/**
 * Whether `o` is a ClusterNetworkPolicy of any version of the group (a version the CRD does not
 * serve is still one: the API server refuses it and the scenario fails naming it).
 */
export function isClusterNetworkPolicyObject(o: { apiVersion: string; kind: string }): boolean {
  return o.kind === CNP_KIND && (o.apiVersion.startsWith(`${NETWORK_POLICY_API_GROUP}/`) || isClusterNetworkPolicy(o.apiVersion, o.kind));
}

/** Whether any step of `s` applies a ClusterNetworkPolicy. */
export function scenarioUsesClusterNetworkPolicies(s: Scenario): boolean {
  return stepsOf(s).some((st) => (st.policies ?? []).some(isClusterNetworkPolicyObject));
}

/** Whether `o` is a ClusterNetworkPolicy with an egress `nodes` peer. */
export function hasNodesPeer(o: ManifestObject): boolean {
  if (!isClusterNetworkPolicyObject(o)) return false;
  const egress = (o['spec'] as { egress?: unknown } | undefined)?.egress;
  if (!Array.isArray(egress)) return false;
  return egress.some((r: unknown) => Array.isArray((r as { to?: unknown }).to) && ((r as { to: unknown[] }).to).some((p) => typeof p === 'object' && p !== null && 'nodes' in p));
}

/** Whether any step of `s` applies a ClusterNetworkPolicy with an egress `nodes` peer. */
export function scenarioUsesNodePeers(s: Scenario): boolean {
  return stepsOf(s).some((st) => (st.policies ?? []).some(hasNodesPeer));
}

/**
 * Applies the experimental ClusterNetworkPolicy CRD with `kubectl` (a binary and its
 * kubeconfig) and waits until the API server serves it as the experimental channel. Fails
 * naming the manifest when it is missing.
 */
export async function installExperimentalCnpCrd(kubectl: string, kubeconfig: string, admin: KubeConfig, manifest = CNP_EXPERIMENTAL_MANIFEST): Promise<void> {
  if (!existsSync(manifest)) throw new Error(`cannot install the ClusterNetworkPolicy CRD: ${manifest} does not exist (generate it: npm run manifests)`);
  await run(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', manifest], { maxBuffer: 16 << 20 });
  const api = admin.makeApiClient(ApiextensionsV1Api);
  await pollUntil(
    async () => {
      const crd = await api.readCustomResourceDefinition({ name: CNP_CRD_NAME });
      const established = (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
      return established && crd.metadata?.annotations?.[CNP_CHANNEL_ANNOTATION] === 'experimental' ? true : undefined;
    },
    { description: `the experimental ${CNP_CRD_NAME} CRD to be served`, timeoutMs: 60_000, intervalMs: 100 },
  );
}
