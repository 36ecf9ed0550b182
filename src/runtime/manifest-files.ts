/**
 * Reading Kubernetes manifests from files: the one loader behind `tessera validate`, the
 * file ListerWatcher (offline informers) and the user tools.
 *
 * - A path may be a file or a directory; directories are read recursively in name order,
 *   taking `*.yaml`, `*.yml` and `*.json` and skipping hidden entries. A file named
 *   directly is read whatever its extension.
 * - Every document of a multi-document YAML file is read (JSON is YAML); empty documents
 *   (a trailing `---`) are skipped; `kind: List` / `*List` documents and JSON arrays are
 *   expanded into their items.
 * - Nothing is thrown for bad input: unreadable files and unparseable documents come back
 *   as problems that name the file and the 1-based document, so a caller can report them
 *   all and keep going.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseAllDocuments } from 'yaml';

/** Where a manifest came from: file, 1-based document, and 1-based list item if expanded. */
export interface ManifestSource {
  readonly file: string;
  readonly document?: number;
  readonly item?: number;
}

export interface ManifestDocument {
  readonly value: unknown;
  readonly source: ManifestSource;
}

export interface ManifestProblem {
  readonly source: ManifestSource;
  /** What is wrong; for a syntax error without its position, which is in `line`/`column`. */
  readonly reason: string;
  /** 1-based position of a YAML syntax error in its file. */
  readonly line?: number;
  readonly column?: number;
}

/** A document or a problem, in the order they were met. */
export type ManifestEntry = ManifestDocument | ManifestProblem;

export function isManifestProblem(e: ManifestEntry): e is ManifestProblem {
  return 'reason' in e;
}

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/** `file (document 2, item 3)`. */
export function describeManifestSource(s: ManifestSource): string {
  if (s.document === undefined) return s.file;
  return `${s.file} (document ${s.document}${s.item === undefined ? '' : `, item ${s.item}`})`;
}

/** The manifest files under `input` (itself, when it is a file), in name order. */
export async function listManifestFiles(input: string): Promise<string[]> {
  const info = await stat(input);
  if (!info.isDirectory()) return [input];
  const out: string[] = [];
  const entries = (await readdir(input, { withFileTypes: true })).filter((e) => !e.name.startsWith('.'));
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(input, entry.name);
    if (entry.isDirectory()) out.push(...(await listManifestFiles(full)));
    else if (MANIFEST_EXTENSIONS.has(path.extname(entry.name).toLowerCase())) out.push(full);
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses one file's text into documents (lists expanded) and problems, in document order. */
export function parseManifests(text: string, file: string): ManifestEntry[] {
  const entries: ManifestEntry[] = [];
  // Positions come from a line counter, not from the error text: `prettyErrors` would put them
  // into the message, where a caller could only get them back by parsing prose.
  const lines = new LineCounter();
  parseAllDocuments(text, { prettyErrors: false, lineCounter: lines }).forEach((doc, i) => {
    const source: ManifestSource = { file, document: i + 1 };
    const first = doc.errors[0];
    if (first !== undefined) {
      const { line, col } = lines.linePos(first.pos[0]);
      entries.push({ source, reason: first.message.split('\n')[0] || 'parse error', line, column: col });
      return;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const items = Array.isArray(value)
      ? value
      : isRecord(value) && typeof value['kind'] === 'string' && value['kind'].endsWith('List') && Array.isArray(value['items'])
        ? value['items']
        : undefined;
    if (items === undefined) entries.push({ value, source });
    else items.forEach((v: unknown, j) => entries.push({ value: v, source: { ...source, item: j + 1 } }));
  });
  return entries;
}

/** Reads every manifest under `paths`, in order. */
export async function readManifests(paths: readonly string[]): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (const input of paths) {
    let files: string[];
    try {
      files = await listManifestFiles(input);
    } catch (err) {
      entries.push({ source: { file: input }, reason: (err as Error).message });
      continue;
    }
    for (const file of files) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        entries.push({ source: { file }, reason: (err as Error).message });
        continue;
      }
      entries.push(...parseManifests(text, file));
    }
  }
  return entries;
}
