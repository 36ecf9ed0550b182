/**
 * The exit statuses of the `tessera` user tools (simulate, explain, render, validate,
 * convert) — one scheme for all five, so a script can tell "the answer is no" from "the
 * question could not be asked". (The node commands' refusals are in node-exit-status.ts.)
 *
 * - 0: done, and the answer is the good one;
 * - 1 (`EXIT_FAILED`): done, and the answer is the bad one — a scenario mismatch, an invalid
 *   object (validate), a dropped rule (convert), a pod or node without an endpoint
 *   (explain, render);
 * - 2 (`EXIT_USAGE`): the command line is wrong (`UsageError`), as for every command;
 * - 3 (`EXIT_INPUT`): the input could not be used — an unreadable file or directory, a YAML
 *   syntax error, an unreachable API server, a list it refused (401/403), an invalid object
 *   (unless `--skip-invalid`). The reasons are on stderr, one line each; nothing is
 *   answered from partial input.
 *
 * - 4 (`EXIT_UNENFORCED`): done, but the input holds objects of a policy kind Tessera does not
 *   enforce (an AdminNetworkPolicy: api/unenforced-kinds.ts), which would
 *   change verdicts under Calico. The answer printed is what Tessera enforces; each such object
 *   is named on stderr (`NOT ENFORCED: …`). It wins over 1: a mismatch or an invalid object
 *   next to them is judged on an answer that already leaves them out.
 *
 * 3 is the first refusal status, as for the agent (`EXIT_CANNOT_PROGRAM`: the host it was
 * pointed at cannot be used): in both, what to fix is the environment the command was
 * given, not the verdict or the command line.
 */
import { describeUnenforced, type UnenforcedObject } from '../api/unenforced-kinds.ts';
import { formatInputProblem, type InputError } from '../runtime/input-error.ts';

export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_INPUT = 3;
export const EXIT_UNENFORCED = 4;

/** Prints one `tessera <command>: <problem>` line per problem on stderr; returns `EXIT_INPUT`. */
export function reportInputError(command: string, err: InputError, out: { stderr(text: string): void }): number {
  for (const p of err.problems) out.stderr(`tessera ${command}: ${formatInputProblem(p)}\n`);
  return EXIT_INPUT;
}

/**
 * Prints one `NOT ENFORCED: …` line per object on stderr (each once, in order), and returns
 * `EXIT_UNENFORCED` when there was any, else `code`.
 */
export function reportUnenforced(objects: readonly UnenforcedObject[], out: { stderr(text: string): void }, code: number): number {
  const lines = new Set(objects.map(describeUnenforced));
  for (const l of lines) out.stderr(`${l}\n`);
  return lines.size > 0 ? EXIT_UNENFORCED : code;
}
