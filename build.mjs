#!/usr/bin/env node
// `npm run build`: src/ → dist/, what bin/tessera.js and the image run (no tsx, no
// TypeScript at runtime).
//
// 1. tsc type-checks the shipped sources (tsconfig.build.json: src/ without its tests); a
//    type error fails the build.
// 2. esbuild bundles src/cli/main.ts with its dependencies into ES modules in dist/cli/.
//    Each sub-command's dynamic import() (src/cli/commands.ts) becomes its own chunk, so
//    `tessera version` still loads only main.js.
//
// Why a bundle and not tsc's one-file-per-source output: measured on the same sources
// (README "Installing on a cluster"), the idle agent holds ~69 MB RSS bundled against ~100 MB
// per-file, and peaks at ~82 MB while starting against ~125-145 MB; the controllers ~75 MB
// against ~100 MB. Per-file, Node keeps a module record and the source text of every one of
// @kubernetes/client-node's ~900 modules, most of them generated API groups and models
// Tessera never calls; bundled, only what is reachable is there.
//
// Invariants the sources rely on:
// - Every output file sits in dist/cli/, as its sources sit in src/cli/ and src/runtime/:
//   paths resolved from import.meta.url (version.ts's ../../package.json, demo.ts's
//   ../../examples/) reach the same files from dist/ as from src/.
// - The banner gives each chunk a real `require`: bundled CommonJS dependencies (prom-client,
//   pino, ws) call require() for Node's built-ins, which an ES module does not have.
// - No minification: stack traces keep function names; the linked source maps
//   (NODE_OPTIONS=--enable-source-maps) map them back to src/ lines.
// dist/meta.json is esbuild's metafile: which sources each output holds
// (e2e/build/compiled.unit.test.ts reads it).
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const root = fileURLToPath(new URL('.', import.meta.url));
const dist = join(root, 'dist');

rmSync(dist, { recursive: true, force: true });

const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.error(`build: tsc -p tsconfig.build.json failed (exit ${tsc.status ?? tsc.signal}); dist/ not written`);
  process.exit(1);
}

const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/main.ts'],
  outdir: 'dist/cli',
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  banner: {
    js: "import { createRequire as __tesseraCreateRequire } from 'node:module'; const require = __tesseraCreateRequire(import.meta.url);",
  },
});
writeFileSync(join(dist, 'meta.json'), JSON.stringify(result.metafile, null, 1));
