import { describe, expect, it } from 'vitest';
import { UsageError, walkArgs } from './args.ts';

function collect(argv: string[]): string[] {
  const seen: string[] = [];
  const r = walkArgs(argv, (a) => {
    if (a.positional) seen.push(`pos:${a.flag}`);
    else if (a.flag === '--n') seen.push(`n=${a.int(1, 10)}`);
    else if (a.flag === '--bool') seen.push('bool');
    else if (a.flag === '--s') seen.push(`s=${a.value()}`);
    else throw a.unknown();
  });
  if (r === 'help') seen.push('help');
  return seen;
}

describe('walkArgs', () => {
  it('reads values given separately or inline, and positionals', () => {
    expect(collect(['--s', 'x', '--s=y=z', 'file.yaml', '--bool', '--n=3'])).toEqual(['s=x', 's=y=z', 'pos:file.yaml', 'bool', 'n=3']);
  });

  it('stops at --help', () => {
    expect(collect(['--bool', '-h', '--nope'])).toEqual(['bool', 'help']);
  });

  it('names the argument in every usage error', () => {
    expect(() => collect(['--s'])).toThrow(new UsageError('--s needs a value'));
    expect(() => collect(['--n', '11'])).toThrow('--n must be an integer 1–10, not "11"');
    expect(() => collect(['--n=x'])).toThrow('--n must be an integer 1–10, not "x"');
    expect(() => collect(['--what'])).toThrow('unknown option "--what"');
  });
});
