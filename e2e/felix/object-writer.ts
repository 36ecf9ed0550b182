/**
 * Create-or-replace and delete of the few kinds the Felix differential writes, as plain HTTPS
 * requests with the admin kubeconfig's credentials. (client-node's generic object client
 * serialises a custom resource through its model types, which dropped nested fields of
 * Calico's rules: the API server then reported `spec.ingress[0].action: Required value`.)
 *
 * A write replaces the whole object (a PUT with the live resourceVersion, POST when it does not exist yet), so
 * the API server defaults the object as written, as it defaults a new one. Not server-side
 * apply: SSA keeps fields the server defaulted earlier, which nobody owns — a Kubernetes
 * NetworkPolicy first written without egress rules keeps `policyTypes: [Ingress]` after an
 * apply that adds them, where a fresh one is `[Ingress, Egress]` (round 588 of seed 28 found it:
 * Felix and Tessera's agents both enforced the stored object, the verdict engine the written one).
 */
import { request, type RequestOptions } from 'node:https';

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';

/** apiVersion/kind → the resource's plural, and whether it is namespaced. */
const RESOURCES: Readonly<Record<string, { readonly plural: string; readonly namespaced: boolean }>> = {
  'crd.projectcalico.org/v1/NetworkPolicy': { plural: 'networkpolicies', namespaced: true },
  'crd.projectcalico.org/v1/GlobalNetworkPolicy': { plural: 'globalnetworkpolicies', namespaced: false },
  'crd.projectcalico.org/v1/NetworkSet': { plural: 'networksets', namespaced: true },
  'crd.projectcalico.org/v1/GlobalNetworkSet': { plural: 'globalnetworksets', namespaced: false },
  'crd.projectcalico.org/v1/HostEndpoint': { plural: 'hostendpoints', namespaced: false },
  'crd.projectcalico.org/v1/ClusterInformation': { plural: 'clusterinformations', namespaced: false },
  'projectcalico.org/v3/NetworkPolicy': { plural: 'networkpolicies', namespaced: true },
  'projectcalico.org/v3/GlobalNetworkPolicy': { plural: 'globalnetworkpolicies', namespaced: false },
  'projectcalico.org/v3/NetworkSet': { plural: 'networksets', namespaced: true },
  'projectcalico.org/v3/GlobalNetworkSet': { plural: 'globalnetworksets', namespaced: false },
  'projectcalico.org/v3/HostEndpoint': { plural: 'hostendpoints', namespaced: false },
  'networking.k8s.io/v1/NetworkPolicy': { plural: 'networkpolicies', namespaced: true },
  'discovery.k8s.io/v1/EndpointSlice': { plural: 'endpointslices', namespaced: true },
  'v1/Service': { plural: 'services', namespaced: true },
};

/** A write the API server answered with an error status (its message says which field). */
export class ObjectWriteError extends Error {
  override readonly name = 'ObjectWriteError';
  constructor(
    readonly object: KubernetesObject,
    readonly status: number,
    body: string,
  ) {
    let message = body;
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      // Not a Status object: the raw body says it.
    }
    super(`${object.apiVersion} ${object.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}: HTTP ${status}: ${message}`);
  }
}

export class ObjectWriter {
  constructor(private readonly kc: KubeConfig) {}

  /** The object's URL path, or its collection's (`named` false). */
  private path(o: KubernetesObject, named = true): string {
    const r = RESOURCES[`${o.apiVersion}/${o.kind}`];
    if (r === undefined) throw new Error(`ObjectWriter: no resource for ${o.apiVersion} ${o.kind}`);
    const base = o.apiVersion!.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
    const ns = r.namespaced ? `/namespaces/${encodeURIComponent(o.metadata?.namespace ?? 'default')}` : '';
    return `${base}${ns}/${r.plural}${named ? `/${encodeURIComponent(o.metadata!.name!)}` : ''}`;
  }

  /**
   * Creates `o`, or replaces the object of its name with exactly what `o` says (a PUT carrying
   * the live object's resourceVersion: custom resources refuse an unconditional update).
   */
  async apply(o: KubernetesObject): Promise<void> {
    const live = await this.send(o, 'GET', this.path(o), undefined, undefined, [404]);
    if (live.status === 404) {
      await this.send(o, 'POST', this.path(o, false), JSON.stringify(o), 'application/json');
      return;
    }
    const resourceVersion = (JSON.parse(live.text) as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    const body = { ...o, metadata: { ...o.metadata, resourceVersion } };
    await this.send(o, 'PUT', this.path(o), JSON.stringify(body), 'application/json');
  }

  /** Deletes `o`; one already gone is fine. */
  async delete(o: KubernetesObject): Promise<void> {
    await this.send(o, 'DELETE', this.path(o), undefined, undefined, [404]);
  }

  /** @returns the HTTP status (a success, or one of `fine`) and body @throws ObjectWriteError for any other */
  private async send(o: KubernetesObject, method: string, path: string, body: string | undefined, contentType: string | undefined, fine: readonly number[] = []): Promise<{ status: number; text: string }> {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null) throw new Error('ObjectWriter: the kubeconfig has no current cluster');
    const url = new URL(path, cluster.server);
    const opts: RequestOptions = { method, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers: contentType === undefined ? {} : { 'Content-Type': contentType } };
    await this.kc.applyToHTTPSOptions(opts);
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(opts, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
    if ((status < 200 || status >= 300) && !fine.includes(status)) throw new ObjectWriteError(o, status, text);
    return { status, text };
  }
}
