import { describe, expect, it } from 'vitest';
import { fileProblem, formatInputProblem, InputError } from './input-error.ts';
import { isManifestProblem, parseManifests } from './manifest-files.ts';

describe('input problems', () => {
  it("fileProblem takes a syntax error's line and column from yaml's message (pins yaml's format)", () => {
    const problem = parseManifests('a: 1\n---\nkind: Tier\nmetadata:\n  name: b\n   order: 2\n', 'f.yaml').find(isManifestProblem);
    if (problem === undefined) throw new Error('expected a parse problem');
    const p = fileProblem(problem);
    expect(p).toEqual({ type: 'file', file: 'f.yaml', document: 2, line: 5, column: 9, reason: 'invalid YAML: Nested mappings are not allowed in compact mappings' });
    expect(formatInputProblem(p)).toBe('f.yaml:5:9: invalid YAML: Nested mappings are not allowed in compact mappings');
  });

  it("fileProblem shortens Node's fs errors and keeps any other reason", () => {
    expect(fileProblem({ source: { file: '/x' }, reason: "ENOENT: no such file or directory, stat '/x'" }).reason).toBe('no such file or directory (ENOENT)');
    expect(fileProblem({ source: { file: '/x', document: 3 }, reason: 'document is not an object' })).toEqual({ type: 'file', file: '/x', document: 3, reason: 'document is not an object' });
    expect(formatInputProblem({ type: 'file', file: '/x', document: 3, reason: 'document is not an object' })).toBe('/x (document 3): document is not an object');
  });

  it('formats a refusal with its HTTP status, and no answer with the server', () => {
    expect(formatInputProblem({ type: 'cluster', resource: 'v1 Pod', status: 403, reason: 'pods is forbidden' })).toBe('cannot list v1 Pod: 403 Forbidden: pods is forbidden');
    expect(formatInputProblem({ type: 'cluster', resource: 'v1 Pod', status: 599, reason: 'odd' })).toBe('cannot list v1 Pod: 599: odd');
    expect(formatInputProblem({ type: 'cluster', resource: 'v1 Pod', server: 'https://h:6443', reason: 'API server unreachable: x' })).toBe(
      'cannot list v1 Pod from https://h:6443: API server unreachable: x',
    );
  });

  it('formats an invalid object as Kind ns/name: path: reason, after its source when known', () => {
    expect(formatInputProblem({ type: 'object', object: 'Tier t', path: 'spec.order', reason: 'must be ≥ 0' })).toBe('Tier t: spec.order: must be ≥ 0');
    expect(formatInputProblem({ type: 'object', object: 'Tier t', source: 'f.yaml (document 1)', path: '', reason: 'bad' })).toBe('f.yaml (document 1): Tier t: bad');
  });

  it('an InputError has one message line per problem and needs at least one', () => {
    const err = new InputError([
      { type: 'file', file: 'a', reason: 'x' },
      { type: 'file', file: 'b', reason: 'y' },
    ]);
    expect(err.message).toBe('a: x\nb: y');
    expect(() => new InputError([])).toThrow(RangeError);
  });
});
