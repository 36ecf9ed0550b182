/**
 * Input a command could not use, as data: a file it could not read or parse, an API server
 * it could not reach or that refused a list, an object that fails validation.
 *
 * The user tools (simulate, explain, render, validate, convert) must never answer from
 * partial input: the loaders collect every problem they meet and throw one `InputError`;
 * the command prints one line per problem (`formatInputProblem`) and exits with its input
 * status. Only invalid objects (`ObjectProblem`) may be skipped, and only when the user
 * asks for it (`--skip-invalid`).
 *
 * Guarantees:
 * - every problem carries its location as fields (file/line/column, kind/HTTP status,
 *   object/field path), so callers and tests read fields, not messages;
 * - `formatInputProblem` is one line and needs no stack trace to act on.
 */
import http from 'node:http';
import type { ManifestProblem } from './manifest-files.ts';

/** A file or directory that could not be read, or a document that is not YAML/JSON. */
export interface FileProblem {
  readonly type: 'file';
  readonly file: string;
  /** 1-based document of a multi-document file, when the problem is inside one. */
  readonly document?: number;
  /** 1-based line of a syntax error, counted in the file (not the document). */
  readonly line?: number;
  /** 1-based column of a syntax error. */
  readonly column?: number;
  readonly reason: string;
}

/** A kind the API server did not list: unreachable, unauthorised, forbidden, failing. */
export interface ClusterProblem {
  readonly type: 'cluster';
  /** `apiVersion Kind`, e.g. `projectcalico.org/v3 Tier`. */
  readonly resource: string;
  /** The API server's URL, when known. */
  readonly server?: string;
  /** The HTTP status it answered; absent when none came (refused, reset, timed out, TLS, not an API server). */
  readonly status?: number;
  readonly reason: string;
}

/** An object that fails validation or cannot be keyed; `--skip-invalid` makes it a note. */
export interface ObjectProblem {
  readonly type: 'object';
  /** `Kind ns/name` (`Kind <unnamed>` when it has no name). */
  readonly object: string;
  /** Where it was read (`file (document 2)`), when it came from a file. */
  readonly source?: string;
  /** Field path (`spec.ingress[0].destination.ports[1]`); '' for the object as a whole. */
  readonly path: string;
  readonly reason: string;
}

export type InputProblem = FileProblem | ClusterProblem | ObjectProblem;

/**
 * The one-line form: `file:line:column: reason` for syntax errors (the form editors and
 * terminals jump to), `file: reason` for unreadable paths, `cannot list <kind>: <status>
 * <text>: reason` for an API server's refusal (`cannot list <kind> from <server>: reason`
 * when none came), `Kind ns/name: path: reason` for invalid objects.
 */
export function formatInputProblem(p: InputProblem): string {
  switch (p.type) {
    case 'file': {
      if (p.line !== undefined) return `${p.file}:${p.line}:${p.column ?? 1}: ${p.reason}`;
      return p.document === undefined ? `${p.file}: ${p.reason}` : `${p.file} (document ${p.document}): ${p.reason}`;
    }
    case 'cluster': {
      if (p.status === undefined) return `cannot list ${p.resource}${p.server === undefined ? '' : ` from ${p.server}`}: ${p.reason}`;
      const text = http.STATUS_CODES[p.status];
      return `cannot list ${p.resource}: ${p.status}${text === undefined ? '' : ` ${text}`}: ${p.reason}`;
    }
    case 'object': {
      const where = p.source === undefined ? '' : `${p.source}: `;
      return p.path === '' ? `${where}${p.object}: ${p.reason}` : `${where}${p.object}: ${p.path}: ${p.reason}`;
    }
  }
}

/** The problems with a command's input; its message has one line per problem. */
export class InputError extends Error {
  override name = 'InputError';
  readonly problems: readonly InputProblem[];

  constructor(problems: readonly InputProblem[], options?: ErrorOptions) {
    if (problems.length === 0) throw new RangeError('InputError: problems must not be empty');
    super(problems.map(formatInputProblem).join('\n'), options);
    this.problems = problems;
  }
}

export function isObjectProblem(p: InputProblem): p is ObjectProblem {
  return p.type === 'object';
}

const FS_ERROR = /^(E[A-Z]+): (.*?), \w+ '.*'$/;

/**
 * A `FileProblem` for a problem `readManifests` reported: a syntax error with its line and
 * column, a file-system error (Node's `CODE: text, syscall 'path'`) as
 * `no such file or directory (ENOENT)`.
 */
export function fileProblem(problem: ManifestProblem): FileProblem {
  const { file, document } = problem.source;
  if (problem.line !== undefined) {
    return { type: 'file', file, ...(document === undefined ? {} : { document }), line: problem.line, column: problem.column ?? 1, reason: `invalid YAML: ${problem.reason}` };
  }
  const fs = FS_ERROR.exec(problem.reason);
  const reason = fs === null ? problem.reason : `${fs[2]} (${fs[1]})`;
  return { type: 'file', file, ...(document === undefined ? {} : { document }), reason };
}
