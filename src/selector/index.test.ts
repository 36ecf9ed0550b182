import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as selector from './index.ts';

describe('src/selector public interface', () => {
  it('exports the functions and classes other modules import', () => {
    for (const name of [
      'parseSelector',
      'SelectorParseError',
      'Selector',
      'makeUniqueId',
      'ipSetName',
      'namedPortIpSetId',
      'k8sLabelSelectorToCalico',
      'prefixLabels',
    ]) {
      expect(typeof (selector as Record<string, unknown>)[name], name).toBe('function');
    }
    expect(selector.ALL_SELECTOR_TEXT).toBe('all()');
  });

  it('throws SelectorParseError, an Error subclass with a numeric position', () => {
    const err = (() => {
      try {
        selector.parseSelector('a ==');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(selector.SelectorParseError);
    expect((err as selector.SelectorParseError).position).toBe(4);
  });

  it('does not depend on @kubernetes/client-node', async () => {
    const dir = path.dirname(fileURLToPath(import.meta.url));
    const forbidden = `from '${['@kubernetes', 'client-node'].join('/')}'`;
    for (const file of await readdir(dir)) {
      if (!file.endsWith('.ts')) continue;
      const text = await readFile(path.join(dir, file), 'utf8');
      expect(text.includes(forbidden), file).toBe(false);
    }
  });
});
