/**
 * vitest globalSetup of the `containers` project: builds (or, warm, re-checks in seconds) the
 * images with images/build.sh — the debootstrap base, localhost/tessera:<version> from the
 * Dockerfile, localhost/tessera-controlplane:<Kubernetes version> — then makes sure podman
 * serves the Docker API that testcontainers uses (e2e/containers/podman.ts), and hands the
 * image names and a run id to the test files.
 *
 * Teardown removes every container labelled with this run's id, whatever state the tests
 * left (each file also stops its own in afterAll), then stops the API service if it was
 * started here. A failed build or start does not throw: every containers test then fails
 * with the error (never a silent skip), and the other projects still run.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import readline from 'node:readline';

import type { TestProject } from 'vitest/node';

import { kubernetesVersion } from '../controlplane/binaries.ts';
import { CONTAINERS_CONF, ensurePodmanService, podman, podmanEnv, REPO_ROOT, type PodmanService } from './podman.ts';
import type { ProvidedContainers } from './provided-containers.ts';

/** The label on every container the suite starts; its value is the run id. */
export const RUN_LABEL = 'io.tessera.test-run';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let service: PodmanService | undefined;
  let provided: ProvidedContainers;
  const runId = randomBytes(4).toString('hex');
  try {
    await buildImages();
    service = await ensurePodmanService();
    const version = (JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as { version: string }).version;
    provided = {
      ok: true,
      dockerHost: service.dockerHost,
      containersConf: CONTAINERS_CONF,
      tesseraImage: `localhost/tessera:${version}`,
      controlPlaneImage: `localhost/tessera-controlplane:${kubernetesVersion()}`,
      runId,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`[containers] could not provide images and a container engine:\n${message}\n`);
    provided = { ok: false, error: message };
  }
  project.provide('tesseraContainers', provided);
  return async () => {
    try {
      const ids = (await podman(['ps', '-aq', '--filter', `label=${RUN_LABEL}=${runId}`])).split('\n').filter((id) => id !== '');
      if (ids.length > 0) {
        process.stderr.write(`[containers] removing ${ids.length} container(s) left by this run\n`);
        await podman(['rm', '-f', '-t', '0', ...ids]);
      }
    } finally {
      service?.stop();
    }
  };
}

/** `bash images/build.sh all`, its output prefixed on stderr; throws with the tail on failure. */
async function buildImages(): Promise<void> {
  const child = spawn('bash', [`${REPO_ROOT}images/build.sh`, 'all'], { env: podmanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on('line', (line) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      process.stderr.write(`[images] ${line}\n`);
    });
  }
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`bash images/build.sh all failed (exit ${code}):\n${tail.join('\n')}`);
}
