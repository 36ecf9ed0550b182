// Preload for the compiled-build test: `node --import ./e2e/build/module-log.mjs <main> …`
// writes one line `module-log: <url>` to stderr for every module the ESM loader resolves, so
// a test can see what a command loaded (tsx, @kubernetes/client-node, sources under src/).
// Plain JavaScript on purpose: it must run without tsx.
//
// The resolve hook runs on Node's loader thread; fs.writeSync on fd 2 is synchronous, so no
// line is lost when the process exits right after its last import.
import { writeSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) register(import.meta.url);

/** Node's module customization hook: passes resolution through and records the result. */
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  writeSync(2, `module-log: ${result.url}\n`);
  return result;
}
