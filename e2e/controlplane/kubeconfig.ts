import { writeFileSync } from 'node:fs';

import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** One identity on one API server: everything a kubeconfig with a single context holds. */
export interface KubeconfigSpec {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** Bearer token of the identity. */
  readonly token: string;
  /** User entry name, e.g. `admin` or `system:serviceaccount:ns:name`. */
  readonly user: string;
  /**
   * PEM bundle that verifies the serving certificate. When absent the kubeconfig says
   * `insecure-skip-tls-verify: true` (only ever used against a loopback test server).
   */
  readonly caPem?: string;
  /** Cluster and context name. @default 'tessera' */
  readonly name?: string;
  /** Default namespace of the context. @default none */
  readonly namespace?: string;
}

/** The kubeconfig document (YAML) for `spec`; kubectl and @kubernetes/client-node read the same text. */
export function kubeconfigYaml(spec: KubeconfigSpec): string {
  const { server, token, user, caPem, name = 'tessera', namespace } = spec;
  const cluster =
    caPem === undefined
      ? { server, 'insecure-skip-tls-verify': true }
      : { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name, context: { cluster: name, user, ...(namespace === undefined ? {} : { namespace }) } }],
    'current-context': name,
    preferences: {},
  });
}

/** A client-node `KubeConfig` for `spec`. */
export function kubeConfigFor(spec: KubeconfigSpec): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(spec));
  return kc;
}

/** Writes the kubeconfig for `spec` to `path` (mode 0600: it holds a bearer token) and returns it loaded. */
export function writeKubeconfig(path: string, spec: KubeconfigSpec): KubeConfig {
  writeFileSync(path, kubeconfigYaml(spec), { mode: 0o600 });
  return kubeConfigFor(spec);
}
