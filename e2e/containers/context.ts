/**
 * The containers suite's run context in a test file: the images and engine global-setup.ts
 * prepared. Also points testcontainers at podman (DOCKER_HOST, no Ryuk reaper: its image
 * cannot be pulled here, and global teardown removes this run's containers instead) before
 * any container is created.
 */
import { inject } from 'vitest';

import type { ProvidedContainers } from './provided-containers.ts';

export type ContainersContext = Extract<ProvidedContainers, { ok: true }>;

/** See the file comment. Throws the global setup's error: containers tests never skip. */
export function containersContext(): ContainersContext {
  const provided = inject('tesseraContainers');
  if (provided === undefined) {
    throw new Error('no container engine was provided: run these tests through the vitest `containers` project');
  }
  if (!provided.ok) throw new Error(`the containers suite could not build its images or reach podman:\n${provided.error}`);
  process.env['DOCKER_HOST'] = provided.dockerHost;
  process.env['TESTCONTAINERS_RYUK_DISABLED'] = 'true';
  process.env['CONTAINERS_CONF'] = provided.containersConf;
  return provided;
}
