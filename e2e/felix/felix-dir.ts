/**
 * Where the Felix program is: runs build.sh (a no-op when its cache directory is there; a build
 * from the Go module proxy otherwise, ~1 minute warm, longer cold) and returns the directory it
 * prints (calico-felix and Calico's crds/).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BUILD = fileURLToPath(new URL('./build.sh', import.meta.url));

export function ensureFelix(): string {
  const out = execFileSync('bash', [BUILD], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 << 20 });
  const dir = out.trim().split('\n').pop();
  if (dir === undefined || dir === '') throw new Error(`${BUILD} printed no directory`);
  return dir;
}
