/**
 * The calico-cnp program (main.go; built by build.sh, `make calico-cnp`) as a function: a batch
 * of ClusterNetworkPolicies in, Calico's answer for each out, in one process run.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Where build.sh puts the binary: the digest of go.mod, go.sum, main.go and calico.commit. */
export function calicoCnpBinary(): string {
  const digest = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go', 'calico.commit']) digest.update(readFileSync(join(here, f)));
  const cache = process.env['TESSERA_CACHE'] ?? join(homedir(), '.cache', 'tessera');
  return join(cache, 'calico-cnp', digest.digest('hex').slice(0, 16), 'calico-cnp');
}

export const CALICO_COMMIT = readFileSync(join(here, 'calico.commit'), 'utf8').trim();

export function haveCalicoCnp(): boolean {
  return existsSync(calicoCnpBinary());
}

/** Calico's GlobalNetworkPolicy spec (JSON as its Go types print it), or its error. */
export interface CalicoAnswer {
  readonly policy: Record<string, unknown> | null;
  readonly error?: string;
  readonly decodeError?: string;
}

export function calicoConvert(cnps: readonly unknown[]): CalicoAnswer[] {
  if (cnps.length === 0) return [];
  const run = spawnSync(calicoCnpBinary(), [], {
    input: cnps.map((c) => JSON.stringify(c)).join('\n') + '\n',
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (run.status !== 0) throw new Error(`calico-cnp exited ${String(run.status ?? run.signal)}: ${run.stderr}`);
  const lines = run.stdout.split('\n').filter((l) => l !== '');
  if (lines.length !== cnps.length) throw new Error(`calico-cnp answered ${lines.length} lines for ${cnps.length} policies: ${run.stderr}`);
  return lines.map((l) => JSON.parse(l) as CalicoAnswer);
}
