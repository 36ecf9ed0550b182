/**
 * The root pino logger and the convention for component children.
 *
 * Every long-running component takes a `Logger` in its options and logs through
 * `log.child({component: '…', …})`, so one process's JSON lines can be filtered by
 * component, kind, namespace and name. Tests pass `silentLogger` (or a capturing stream).
 */
import { hostname } from 'node:os';
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

export interface RootLoggerOptions {
  /** pino level. @default process.env.TESSERA_LOG_LEVEL ?? 'info' */
  level?: string;
  /** Where JSON lines go. @default stdout */
  destination?: DestinationStream;
}

/** Creates the process's root logger: JSON, ISO timestamps, tokens redacted. */
export function createRootLogger(opts: RootLoggerOptions = {}): Logger {
  const { level = process.env['TESSERA_LOG_LEVEL'] ?? 'info', destination } = opts;
  const options = {
    level,
    base: { node: hostname() },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: ['*.token', '*.bearerToken', 'token'],
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/** A logger that drops everything; the default in unit tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
