/**
 * How a failure becomes what the user sees: an exit code (documented in `cairn --help`) and one line, or one
 * JSON object, on stderr.
 */
import { isCairnError, type JsonObject } from '@cairn/sdk';
import { isModuleMissing } from '@cairn/worker';

/** The exit codes of `cairn`. */
export const exitCodes = {
  ok: 0,
  /** The store failed, or something unexpected did. */
  failed: 1,
  /** The command line cannot be used. */
  usage: 2,
  runNotFound: 3,
  /** The store or the run refused: held by a live worker, ended, a child run, an argument it does not take. */
  refused: 4,
  /** Stopped by Ctrl-C (SIGINT). */
  interrupted: 130,
} as const;

/** A command line that cannot be used: exit 2. */
export class UsageError extends Error {
  readonly code = 'USAGE';
}

/** Codes of errors a store or a run answers with when it refuses what was asked, rather than failing. */
const refusals = new Set([
  'LEASE_HELD',
  'RUN_ENDED',
  'RUN_WAITING',
  'INVALID_ARGUMENT',
  'AGENT_DRIFT',
  'PLANNER_DRIFT',
]);

/** The exit code a failure ends the command with. */
export function exitCodeOf(error: unknown): number {
  // A --module path with no file is a command line that cannot be used, as cairn-worker has it.
  if (error instanceof UsageError || isModuleMissing(error)) return exitCodes.usage;
  if (!isCairnError(error)) return exitCodes.failed;
  if (error.code === 'RUN_NOT_FOUND') return exitCodes.runNotFound;
  return refusals.has(error.code) ? exitCodes.refused : exitCodes.failed;
}

/** What the user is told of a failure: a stable code, a message, and a Cairn error's data. */
export interface ErrorReport {
  code: string;
  message: string;
  data: JsonObject;
}

/** The report of any thrown value; an error that is not Cairn's is `UNEXPECTED`, with its message. */
export function errorReport(error: unknown): ErrorReport {
  if (error instanceof UsageError) return { code: error.code, message: error.message, data: {} };
  if (isCairnError(error)) return { code: error.code, message: error.message, data: error.data };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'UNEXPECTED', message, data: {} };
}

/** The report as stderr shows it: `error CODE: message`, or `{"error":{...}}` for `--json`. */
export function formatError(report: ErrorReport, json: boolean): string {
  return json ? JSON.stringify({ error: report }) : `error ${report.code}: ${report.message}`;
}
