import { describe, expect, it } from 'vitest';
import { NetnsCommandRunner, RealCommandRunner, RecordingCommandRunner, stdinText } from './command-runner.ts';

describe('RealCommandRunner', () => {
  const runner = new RealCommandRunner();

  it('feeds stdin and collects stdout', async () => {
    expect(await runner.run('cat', [], { stdin: '*filter\nCOMMIT\n' })).toEqual({ code: 0, stdout: '*filter\nCOMMIT\n', stderr: '' });
  });

  it('streams an iterable stdin chunk by chunk, with back-pressure, to the end', async () => {
    function* chunks(): Generator<string> {
      for (let i = 0; i < 2_000; i++) yield `-A cali-x -m comment --comment "cali:${String(i).padStart(16, '0')}" -j DROP\n`;
    }
    const r = await runner.run('cat', [], { stdin: chunks() });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe([...chunks()].join(''));
  });

  it('streams byte chunks as they are, mixed with strings, empty ones too, in order', async () => {
    function* chunks(): Generator<string | Uint8Array> {
      for (let i = 0; i < 300; i++) {
        yield Buffer.from(`-A cali-x -m comment --comment "cali:${String(i).padStart(16, '0')}" -j DROP\n`.repeat(100));
        yield i % 2 === 0 ? `# ${i}\n` : Buffer.alloc(0);
      }
    }
    const r = await runner.run('cat', [], { stdin: chunks() });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(stdinText(chunks()));
    expect(r.stdout.length).toBeGreaterThan(1_000_000);
  });

  it('passes arguments as a vector: shell syntax in a value stays literal', async () => {
    const hostile = '$(touch /tmp/tessera-pwned); `id` && echo x';
    const r = await runner.run('printf', ['%s', hostile]);
    expect(r.stdout).toBe(hostile);
  });

  it('reports the exit code instead of throwing', async () => {
    const r = await runner.run('sh', ['-c', 'echo oops >&2; exit 3']);
    expect(r).toEqual({ code: 3, stdout: '', stderr: 'oops\n' });
  });

  it('reports a missing program as code 127', async () => {
    const r = await runner.run('/nonexistent/tessera-binary', []);
    expect(r.code).toBe(127);
    expect(r.stderr).toContain('ENOENT');
  });

  it('kills a command that outlives its timeout and reports code 124', async () => {
    const r = await runner.run('sleep', ['5'], { timeoutMs: 50 });
    expect(r.code).toBe(124);
  });
});

describe('stdinText', () => {
  it('decodes byte chunks as UTF-8, also a character split across two chunks', () => {
    const bytes = Buffer.from('-A cali-x -m comment --comment "é ü" -j DROP\n', 'utf8');
    const split = bytes.indexOf(0xc3) + 1;
    expect(stdinText([bytes.subarray(0, split), bytes.subarray(split)])).toBe(bytes.toString('utf8'));
    expect(stdinText(['a', Buffer.from('b'), 'c'])).toBe('abc');
    expect(stdinText(['a', 'b'])).toBe('ab');
    expect(stdinText('x')).toBe('x');
    expect(stdinText(undefined)).toBeUndefined();
  });
});

describe('NetnsCommandRunner', () => {
  it('runs the command through `ip netns exec <ns>` with the same argument vector and stdin', async () => {
    const inner = new RecordingCommandRunner();
    await new NetnsCommandRunner('tsr-node', inner).run('iptables-nft-restore', ['--noflush'], { stdin: 'x' });
    expect(inner.calls).toEqual([{ cmd: 'ip', args: ['netns', 'exec', 'tsr-node', 'iptables-nft-restore', '--noflush'], stdin: 'x' }]);
  });

  it('rejects namespace names that are not plain names', () => {
    expect(() => new NetnsCommandRunner('../etc')).toThrow(TypeError);
    expect(() => new NetnsCommandRunner('a b')).toThrow(TypeError);
  });
});
