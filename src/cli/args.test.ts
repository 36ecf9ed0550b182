import { describe, expect, it } from 'vitest';
import { choiceFlag, intFlag, listFlag, parseFlags, readCommandLine, readNamespacedName, switchFlag, textFlag, textFlagOr, usage, UsageError } from './args.ts';

const FLAGS = {
  s: listFlag('--s', '<text>', 'a repeatable string'),
  n: intFlag('--n', '<n>', 'a small number', undefined, { min: 1, max: 10 }),
  bool: switchFlag('--bool', 'a switch'),
  file: textFlag('--filename', '<file>', 'a file', { short: '-f', env: 'FILE' }),
};

function collect(argv: string[], positionals = true): unknown {
  const r = parseFlags(argv, FLAGS, { env: {}, positionals });
  return r === 'help' ? 'help' : { ...r.values, positionals: r.positionals };
}

describe('parseFlags', () => {
  it('reads values given separately or inline, repeatable flags in order, and positionals', () => {
    expect(collect(['--s', 'x', '--s=y=z', 'file.yaml', '--bool', '--n=3', '-f', 'a.yaml'])).toEqual({ s: ['x', 'y=z'], n: 3, bool: true, file: 'a.yaml', positionals: ['file.yaml'] });
    expect(collect([])).toEqual({ s: [], n: undefined, bool: false, file: undefined, positionals: [] });
  });

  it('stops at --help: what comes before is checked, what comes after is not', () => {
    expect(collect(['--bool', '-h', '--nope'])).toBe('help');
    expect(collect(['--help'])).toBe('help');
    expect(() => collect(['--nope', '--help'])).toThrow('unknown option "--nope"');
  });

  it('names the argument in every usage error', () => {
    expect(() => collect(['--s'])).toThrow(new UsageError('--s needs a value'));
    expect(() => collect(['--n', '11'])).toThrow('--n must be an integer 1–10, not "11"');
    expect(() => collect(['--n=x'])).toThrow('--n must be an integer 1–10, not "x"');
    expect(() => collect(['--what'])).toThrow('unknown option "--what"');
    expect(() => collect(['--what=1'])).toThrow('unknown option "--what=1"');
    expect(() => collect(['-x'])).toThrow('unknown option "-x"');
  });

  it('a value may start with a dash (a bad number, not a missing value)', () => {
    expect(() => collect(['--n', '-1'])).toThrow('--n must be an integer 1–10, not "-1"');
  });

  it('without positionals a bare argument is an unknown option', () => {
    expect(() => collect(['file.yaml'], false)).toThrow('unknown option "file.yaml"');
  });

  it('an absent flag takes its environment variable when set and not empty', () => {
    expect(parseFlags([], FLAGS, { env: { FILE: 'e.yaml' } })).toMatchObject({ values: { file: 'e.yaml' } });
    expect(parseFlags([], FLAGS, { env: { FILE: '' } })).toMatchObject({ values: { file: undefined } });
    expect(parseFlags(['-f', 'x'], FLAGS, { env: { FILE: 'e.yaml' } })).toMatchObject({ values: { file: 'x' } });
  });

  it('choices name every allowed value', () => {
    const flags = { mode: choiceFlag('--mode', '<mode>', 'how', ['auto', 'nft', 'legacy'] as const, 'auto'), onOff: choiceFlag('--x', '<on|off>', 'x', ['on', 'off'] as const, 'on') };
    expect(() => parseFlags(['--mode', 'iptables'], flags)).toThrow('--mode must be auto, nft or legacy, not "iptables"');
    expect(() => parseFlags(['--x', 'yes'], flags)).toThrow('--x must be on or off, not "yes"');
  });
});

describe('readNamespacedName', () => {
  it('reads <namespace>/<name>, naming the flag otherwise', () => {
    expect(readNamespacedName('--svc', 'tessera-system/tessera-typha')).toEqual({ namespace: 'tessera-system', name: 'tessera-typha' });
    expect(() => readNamespacedName('--svc', 'tessera-typha')).toThrow(new UsageError('--svc must be <namespace>/<name>, not "tessera-typha"'));
    expect(() => readNamespacedName('--svc', 'a/b/c', 'service')).toThrow('--svc must be <namespace>/<service>, not "a/b/c"');
    expect(() => readNamespacedName('--svc', '/b')).toThrow(UsageError);
    expect(() => readNamespacedName('--svc', 'A/b')).toThrow(UsageError);
  });
});

describe('usage', () => {
  it('lists each flag with its value, description and default, wrapping long ones under the description column', () => {
    const text = usage(
      { synopsis: 'tessera x [options]', about: 'Does x.', footer: 'exit status: 0 ok' },
      {
        port: intFlag('--port', '<n>', 'port to listen on (0 picks one)', 80, { min: 0 }),
        host: textFlagOr('--host', '<addr>', 'address to listen on', '0.0.0.0', { heading: 'Where:' }),
        long: textFlag('--a-very-long-flag-name', '<value>', 'a description long enough that it has to be wrapped onto a second line of the usage text'),
        file: textFlag('--filename', '<file>', 'input', { short: '-f' }),
      },
    );
    expect(text).toBe(
      [
        'usage: tessera x [options]',
        '',
        'Does x.',
        '',
        '  --port <n>                   port to listen on (0 picks one) (default 80)',
        '  Where:',
        '  --host <addr>                address to listen on (default 0.0.0.0)',
        '  --a-very-long-flag-name <value>',
        '                               a description long enough that it has to be wrapped onto a second',
        '                               line of the usage text',
        '  -f, --filename <file>        input',
        '',
        'exit status: 0 ok',
        '',
      ].join('\n'),
    );
  });
});

describe('readCommandLine', () => {
  function capture() {
    const out = { stdout: '', stderr: '' };
    return { out, streams: { stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
  }

  it('--help: the usage on stdout, exit 0; a usage error: the message, a blank line and the usage on stderr, exit 2', () => {
    const help = capture();
    expect(readCommandLine('x', 'usage: tessera x\n', () => 'help', help.streams)).toEqual({ exitCode: 0 });
    expect(help.out).toEqual({ stdout: 'usage: tessera x\n', stderr: '' });
    const bad = capture();
    const fail = (): never => {
      throw new UsageError('--port must be an integer 0–65535, not "x"');
    };
    expect(readCommandLine('x', 'usage: tessera x\n', fail, bad.streams)).toEqual({ exitCode: 2 });
    expect(bad.out).toEqual({ stdout: '', stderr: 'tessera x: --port must be an integer 0–65535, not "x"\n\nusage: tessera x\n' });
  });

  it('passes the options on, and lets any other error through (a bug, not the user\'s mistake)', () => {
    expect(readCommandLine('x', '', () => ({ port: 1 }), capture().streams)).toEqual({ options: { port: 1 } });
    expect(() =>
      readCommandLine('x', '', () => {
        throw new TypeError('boom');
      }),
    ).toThrow(TypeError);
  });
});
