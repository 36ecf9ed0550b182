#!/usr/bin/env node
// Runs the compiled CLI (dist/, produced by `npm run build`); production never loads tsx.
// From a checkout without a build, `npm run tessera -- <command>` runs the sources instead.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(
    `tessera: ${fileURLToPath(main)} does not exist: run npm run build ` +
      '(or run the sources with npm run tessera -- <command>)\n',
  );
  process.exit(1);
}
await import(main.href);
