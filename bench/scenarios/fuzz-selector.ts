/**
 * Fuzzes the selector parser: `npm run bench -- fuzz-selector [count=1000000] [seed=1]`.
 *
 * Feeds `count` inputs from a seeded PRNG (so a run is reproducible from its seed) through
 * `parseSelector`. The inputs mix:
 * - random printable ASCII (with CR/LF/tab), random UTF-16 code units (lone surrogates
 *   included) and random grammar-token soup, which mostly exercise the error paths;
 * - selectors generated from the grammar (keyword-named labels, both quote styles, all
 *   operator spellings, nesting) and then mutated 0–3 times, which get deep into the parser;
 * - deep nesting of `(` and `!(` around the nesting limit.
 *
 * A crash is any exception other than `SelectorParseError`, an unmutated generated
 * selector being rejected, or, for inputs that parse: the canonical form failing to parse,
 * the round-trip form (`toRoundTripString`) failing to re-parse to the same canonical form,
 * a unique-ID mismatch, the re-parsed selector evaluating differently on any of a set of
 * label maps, or `neverMatches()` claiming a selector that matched.
 * Prints one JSON line and exits non-zero if there was any crash, with the first few
 * crashing inputs on stderr.
 */
import { report, type BenchScenario } from '../scenario.ts';
import { parseSelector, SelectorParseError, type Selector } from '../../src/selector/index.ts';
import { seededRandom } from '../../src/runtime/seeded-random.ts';

const LABELS = ['a', 'b', 'app', 'in', 'not', 'has', 'all', 'global', 'contains', 'starts', 'ends', 'with', 'notin', 'constructor', '__proto__', 'projectcalico.org/namespace', 'x-y_z/1.2'];
const VALUES = ['', 'a', 'b', 'web', 'in', '"', "'", 'x"y', "it's", ' ', '\t', 'é', '\u{1F600}', '\uFF5E', 'a\nb', '\\'];
const TOKENS = ['a', 'in', 'not', 'has(', 'all(', 'global(', 'has', 'all', ')', '(', '{', '}', ',', '"x"', "'y'", '"', "'", '==', '!=', '!', '&&', '||', '&', '|', '=', ' ', '\t', '\n', '\r', 'contains', 'starts', 'with', 'ends', 'startswith', 'notin', '%', 'é', ':'];
const ASCII = ' \t\r\n!"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~';

class Generator {
  constructor(private readonly rnd: () => number) {}

  int(n: number): number {
    return Math.floor(this.rnd() * n);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)] as T;
  }

  ws(): string {
    return this.pick(['', '', ' ', '\t', '  ']);
  }

  ws1(): string {
    return this.pick([' ', ' ', '\t', ' \t']);
  }

  quoted(v: string): string {
    if (v.includes('"')) return `'${v}'`;
    if (v.includes("'")) return `"${v}"`;
    return this.rnd() < 0.5 ? `'${v}'` : `"${v}"`;
  }

  /** A selector that Calico accepts. */
  valid(depth: number): string {
    const r = this.rnd();
    if (depth <= 0 || r < 0.45) return this.leaf();
    if (r < 0.6) return `${'!'.repeat(1 + this.int(3))}${this.ws()}${this.operand(depth - 1)}`;
    if (r < 0.7) return `(${this.ws()}${this.valid(depth - 1)}${this.ws()})`;
    const op = this.rnd() < 0.5 ? '&&' : '||';
    const n = 2 + this.int(3);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(this.operand(depth - 1));
    return parts.join(`${this.ws()}${op}${this.ws()}`);
  }

  /** An operation: a leaf, a negation or a parenthesised group (safe inside && / ||). */
  private operand(depth: number): string {
    if (depth <= 0 || this.rnd() < 0.6) return this.leaf();
    if (this.rnd() < 0.3) return `!${this.ws()}${this.operand(depth - 1)}`;
    return `(${this.ws()}${this.valid(depth - 1)}${this.ws()})`;
  }

  private leaf(): string {
    const k = this.pick(LABELS);
    switch (this.int(6)) {
      case 0:
        return `has(${this.ws()}${k}${this.ws()})`;
      case 1:
        return this.rnd() < 0.5 ? `all(${this.ws()})` : `global(${this.ws()})`;
      case 2:
        return `${k}${this.ws()}${this.pick(['==', '!='])}${this.ws()}${this.quoted(this.pick(VALUES))}`;
      case 3: {
        const op = this.pick(['contains', 'starts with', 'startswith', 'ends with', 'endswith', 'starts \t with']);
        return `${k}${this.ws1()}${op}${this.ws()}${this.quoted(this.pick(VALUES))}`;
      }
      default: {
        const op = this.pick(['in', 'not in', 'notin']);
        const n = this.int(4);
        const members: string[] = [];
        for (let i = 0; i < n; i++) members.push(this.quoted(this.pick(VALUES)));
        const trailing = n > 0 && this.rnd() < 0.2 ? ',' : '';
        return `${k}${this.ws1()}${op}${this.ws()}{${this.ws()}${members.join(`${this.ws()},${this.ws()}`)}${trailing}${this.ws()}}`;
      }
    }
  }

  mutate(text: string): string {
    const n = this.int(text.length + 1);
    switch (this.int(6)) {
      case 0:
        return text.slice(0, n) + text.slice(n + 1);
      case 1:
        return text.slice(0, n) + this.pick(TOKENS) + text.slice(n);
      case 2:
        return text.slice(0, n) + this.pick(ASCII.split('')) + text.slice(n);
      case 3: {
        const m = this.int(text.length + 1);
        const [i, j] = n < m ? [n, m] : [m, n];
        return text.slice(0, j) + text.slice(i, j) + text.slice(j);
      }
      case 4:
        return text.slice(0, n);
      default: {
        const m = this.int(text.length);
        const chars = text.split('');
        const c = chars[n];
        chars[n] = chars[m] ?? '';
        chars[m] = c ?? '';
        return chars.join('');
      }
    }
  }

  /** One fuzz input, and whether it must parse. */
  input(): { text: string; mustParse: boolean } {
    const r = this.rnd();
    if (r < 0.15) {
      let s = '';
      const n = this.int(40);
      for (let i = 0; i < n; i++) s += ASCII[this.int(ASCII.length)];
      return { text: s, mustParse: false };
    }
    if (r < 0.22) {
      let s = '';
      const n = this.int(20);
      for (let i = 0; i < n; i++) s += String.fromCharCode(this.int(0x10000));
      return { text: s, mustParse: false };
    }
    if (r < 0.37) {
      let s = '';
      const n = this.int(40);
      for (let i = 0; i < n; i++) s += this.pick(TOKENS);
      return { text: s, mustParse: false };
    }
    if (r < 0.38) {
      const depth = 990 + this.int(20);
      const open = this.rnd() < 0.5 ? '(' : '!(';
      return { text: `${open.repeat(depth)}has(a)${')'.repeat(depth)}`, mustParse: false };
    }
    let text = this.valid(1 + this.int(5));
    if (r < 0.6) return { text, mustParse: true };
    const mutations = 1 + this.int(3);
    for (let i = 0; i < mutations; i++) text = this.mutate(text);
    return { text, mustParse: false };
  }

  labels(): Record<string, string> {
    const out: Record<string, string> = {};
    const n = this.int(6);
    for (let i = 0; i < n; i++) Object.defineProperty(out, this.pick(LABELS), { value: this.pick(VALUES), enumerable: true, writable: true, configurable: true });
    return out;
  }
}

/** Returns a description of what went wrong, or undefined if the parsed selector is sound. */
function checkParsed(sel: Selector, maps: readonly Record<string, string>[]): string | undefined {
  const canonical = sel.toString();
  // Calico's canonical form of `!(!x)` is `!!x`, which re-parses as `x` (src/selector/ast.ts):
  // the exact round trip goes through toRoundTripString; the canonical form must still parse.
  const exact = sel.toRoundTripString();
  let again: Selector;
  try {
    parseSelector(canonical);
    again = parseSelector(exact);
  } catch (e) {
    return `canonical form ${JSON.stringify(canonical)} or ${JSON.stringify(exact)} does not re-parse: ${String(e)}`;
  }
  if (again.toString() !== canonical) return `round trip ${JSON.stringify(exact)} re-prints as ${JSON.stringify(again.toString())}, not ${JSON.stringify(canonical)}`;
  if (again.uniqueId() !== sel.uniqueId()) return `unique ID changed across round trip of ${JSON.stringify(exact)}`;
  const never = sel.neverMatches();
  for (const m of maps) {
    const want = sel.evaluate(m);
    if (again.evaluate(m) !== want) return `evaluation differs after round trip on ${JSON.stringify(m)}`;
    if (want && never) return `neverMatches() but matched ${JSON.stringify(m)}`;
  }
  return undefined;
}

const scenario: BenchScenario = {
  description: 'fuzzes parseSelector with 1M random and mutated inputs (seeded); fails on any non-SelectorParseError or round-trip mismatch',
  includeInDefaultRun: false,
  async run(args) {
    const count = args[0] === undefined ? 1_000_000 : Number(args[0]);
    const seed = args[1] === undefined ? 1 : Number(args[1]);
    if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`fuzz-selector: count must be a non-negative integer, got ${args[0]}`);
    if (!Number.isSafeInteger(seed)) throw new RangeError(`fuzz-selector: seed must be an integer, got ${args[1]}`);
    const gen = new Generator(seededRandom(seed));
    const maps = Array.from({ length: 12 }, () => gen.labels());
    maps.push({}, { a: '', b: 'web' });

    let parsed = 0;
    let rejected = 0;
    let crashes = 0;
    const examples: string[] = [];
    const crash = (input: string, why: string): void => {
      crashes++;
      if (examples.length < 5) examples.push(`${JSON.stringify(input)}: ${why}`);
    };

    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const { text, mustParse } = gen.input();
      let sel: Selector;
      try {
        sel = parseSelector(text);
      } catch (e) {
        if (!(e instanceof SelectorParseError)) {
          crash(text, `threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
        } else if (mustParse) {
          crash(text, `generated valid selector rejected: ${e.message}`);
        } else {
          rejected++;
        }
        continue;
      }
      parsed++;
      try {
        const problem = checkParsed(sel, maps);
        if (problem !== undefined) crash(text, problem);
      } catch (e) {
        crash(text, `post-parse step threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
      }
    }
    const seconds = Math.round((performance.now() - start) / 10) / 100;
    report('fuzz-selector', 'random', { inputs: count, parsed, rejected, crashes, seconds });
    if (crashes > 0) {
      process.stderr.write(`fuzz-selector: ${crashes} crash(es) with seed ${seed}; first ones:\n${examples.join('\n')}\n`);
      process.exitCode = 1;
    }
  },
};

export default scenario;
