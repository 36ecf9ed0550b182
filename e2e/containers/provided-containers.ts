/** What the `containers` project's global setup hands to its test files (provide/inject). */
export type ProvidedContainers =
  | {
      readonly ok: true;
      /** `unix:///run/podman/podman.sock`: testcontainers' DOCKER_HOST. */
      readonly dockerHost: string;
      /** images/containers.conf (or the caller's CONTAINERS_CONF). */
      readonly containersConf: string;
      /** `localhost/tessera:<package.json version>` */
      readonly tesseraImage: string;
      /** `localhost/tessera-controlplane:<Kubernetes version>` */
      readonly controlPlaneImage: string;
      /** Label value every container of this run carries (io.tessera.test-run), for teardown. */
      readonly runId: string;
    }
  | { readonly ok: false; readonly error: string };

declare module 'vitest' {
  export interface ProvidedContext {
    tesseraContainers: ProvidedContainers;
  }
}
