import { CairnError } from './errors.js';

/** The most UTF-16 code units a run id a caller chooses may have; child run ids extend it by a node id. */
export const maxRunIdLength = 256;

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
