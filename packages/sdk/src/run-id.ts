import { CairnError } from './errors.js';

/** The most UTF-16 code units a run id a caller chooses may have; child run ids extend it by a node id. */
export const maxRunIdLength = 256;

/**
 * Run ids that begin with it are Cairn's own: the ids of child runs. A caller cannot start a run under one,
 * so no run a caller creates can stand where a planner's node will put its child.
 */
export const reservedRunIdPrefix = 'cairn:';

/**
 * The id of the child run a planner's node `nodeId` starts under run `parentRunId`. One to one: node ids hold
 * no `/`, so the last `/` splits it back; and no caller-chosen id has the reserved prefix.
 */
export function childRunId(parentRunId: string, nodeId: string): string {
  return `${reservedRunIdPrefix}${parentRunId}/${nodeId}`;
}

// A surrogate without its other half: text no store can keep as it is (Redis turns it into U+FFFD).
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Refuses, with `INVALID_ARGUMENT` and before any store sees it, a run id a caller chose that not every store
 * can keep exactly: not a string, empty, longer than `maxRunIdLength`, holding NUL or a lone surrogate. Two
 * ids that differ only there would become one run on one store and fail on another.
 */
export function checkRunId(runId: unknown): string {
  const why =
    typeof runId !== 'string'
      ? 'it is not a string'
      : runId.length === 0
        ? 'it is empty'
        : runId.length > maxRunIdLength
          ? `it is ${runId.length} characters long, more than ${maxRunIdLength}`
          : runId.includes('\u0000')
            ? 'it holds a NUL character'
            : loneSurrogate.test(runId)
              ? 'it holds half of a surrogate pair (text cut inside an emoji)'
              : undefined;
  if (why === undefined) return runId as string;
  const shown =
    typeof runId === 'string' ? JSON.stringify(runId.slice(0, 80)) : String(typeof runId);
  throw new CairnError('INVALID_ARGUMENT', `The run id ${shown} is refused: ${why}.`, {
    data: { reason: why },
  });
}

/**
 * `checkRunId` for an id a caller names a new run with (`execute`, `client.start`): it also refuses the
 * prefix reserved for child runs. Reading a child run by its id (`client.get`) stays allowed.
 */
export function checkNewRunId(runId: unknown): string {
  const checked = checkRunId(runId);
  if (!checked.startsWith(reservedRunIdPrefix)) return checked;
  throw new CairnError(
    'INVALID_ARGUMENT',
    `The run id ${JSON.stringify(checked.slice(0, 80))} is refused: ids beginning with ` +
      `"${reservedRunIdPrefix}" are reserved for the child runs Cairn starts.`,
    { data: { reason: 'reserved prefix', prefix: reservedRunIdPrefix } },
  );
}

/** The longest subject (`NewRun.subject`) a run may be given. */
export const maxSubjectLength = 200;

/**
 * A run's subject (a user or tenant id): 1 to 200 characters, no NUL and no half of a surrogate pair, so every
 * store keeps it as given. `INVALID_ARGUMENT` otherwise, before any store sees it.
 */
export function checkSubject(subject: unknown): string {
  if (
    typeof subject === 'string' &&
    subject.length > 0 &&
    subject.length <= maxSubjectLength &&
    !subject.includes('\u0000') &&
    !loneSurrogate.test(subject)
  )
    return subject;
  throw new CairnError(
    'INVALID_ARGUMENT',
    `A run's subject must be a string of 1 to ${maxSubjectLength} characters without NUL or a lone surrogate.`,
    { data: { reason: 'subject invalid' } },
  );
}
