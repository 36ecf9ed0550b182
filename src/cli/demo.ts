/**
 * `tessera demo` (`npm run demo`): what Tessera can do today on `examples/`, with no cluster.
 * It validates the example shop's Calico policies with Calico's defaulting and field-path
 * validation. Once the simulator lands, the demo becomes the connectivity matrix of the shop
 * plus one explained denied flow.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runValidate } from './validate.ts';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

export async function runDemo(): Promise<number> {
  const files = (await readdir(EXAMPLES)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const rel = (f: string): string => path.relative(process.cwd(), path.join(EXAMPLES, f));
  process.stdout.write(`Validating the example shop's Calico resources (${files.length} files in examples/):\n\n`);
  const code = await runValidate(files.flatMap((f) => ['-f', rel(f)]));
  process.stdout.write(
    '\nNext: `tessera simulate` will print the shop\'s pod-to-pod connectivity matrix and explain\n' +
      'a denied flow, using the same engine the node agent runs.\n',
  );
  return code;
}
