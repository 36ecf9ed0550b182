/**
 * One validation finding, located by a field path, and the collector validators write to.
 *
 * Paths use the notation users see in YAML: `spec.ingress[2].source.selector`,
 * `metadata.labels["app/name"]`. Validation reports every finding it can (never stops at
 * the first), in document order.
 */

/** `error` makes an object invalid; `warning` is advice (the object is still accepted). */
export type Severity = 'error' | 'warning';

export interface FieldError {
  readonly path: string;
  readonly message: string;
  /** Absent means `error`. */
  readonly severity?: Severity;
}

export function severityOf(finding: FieldError): Severity {
  return finding.severity ?? 'error';
}

export function isError(finding: FieldError): boolean {
  return severityOf(finding) === 'error';
}

/** `path` + `.field` (or just `field` at the root). */
export function fieldPath(path: string, field: string): string {
  return path === '' ? field : `${path}.${field}`;
}

/** `path[i]` for list items, `path["key"]` for map entries whose key is not an identifier. */
export function indexPath(path: string, index: number | string): string {
  if (typeof index === 'number') return `${path}[${index}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(index) ? `${path}.${index}` : `${path}[${JSON.stringify(index)}]`;
}

/** Collects findings in the order they are reported. */
export class FieldErrorCollector {
  readonly #findings: FieldError[] = [];

  error(path: string, message: string): void {
    this.#findings.push({ path, message });
  }

  warning(path: string, message: string): void {
    this.#findings.push({ path, message, severity: 'warning' });
  }

  get findings(): FieldError[] {
    return [...this.#findings];
  }
}
