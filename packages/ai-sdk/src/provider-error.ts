import { APICallError } from '@ai-sdk/provider';
import { CairnError, isCairnError, type JsonObject } from '@cairn/sdk';

/** What a provider error is mapped with. */
export interface ErrorContext {
  provider: string;
  model: string;
  /** Waits a provider asks for beyond this are cut to it. */
  maxRetryAfterMs: number;
  /** The current time, to read a `retry-after` given as an HTTP date. */
  now: () => number;
}

/**
 * Maps what a provider threw to a `MODEL_FAILED` Cairn error. Rate limits (429), timeouts (408), conflicts
 * (409), overload and server errors (5xx, 529) and anything the provider marks retryable are `retryable`,
 * with the provider's `retry-after-ms` / `retry-after` as `data.retryAfterMs`; invalid requests (400, 401,
 * 403, 404, 422) and every other error are not.
 */
export function toCairnError(error: unknown, context: ErrorContext): CairnError {
  if (isCairnError(error)) return error;
  const who = `${context.provider} model "${context.model}"`;
  const data: JsonObject = { provider: context.provider, model: context.model };
  if (APICallError.isInstance(error)) {
    const { statusCode } = error;
    if (statusCode !== undefined) data.statusCode = statusCode;
    const retryable = error.isRetryable || isRetryableStatus(statusCode);
    if (retryable) {
      const retryAfterMs = retryAfterOf(error.responseHeaders, context);
      if (retryAfterMs !== undefined) data.retryAfterMs = retryAfterMs;
    }
    const status = statusCode === undefined ? '' : ` with HTTP ${statusCode}`;
    return new CairnError('MODEL_FAILED', `${who} failed${status}: ${error.message}`, {
      retryable,
      data,
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CairnError('MODEL_FAILED', `${who} failed: ${message}`, { data, cause: error });
}

function isRetryableStatus(status: number | undefined): boolean {
  return status === 408 || status === 409 || status === 429 || (status ?? 0) >= 500;
}

/**
 * The wait a provider asked for, in whole milliseconds: `retry-after-ms` first (OpenAI sends it), then
 * `retry-after` in seconds or as an HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterOf(
  headers: Readonly<Record<string, string>> | undefined,
  context: Pick<ErrorContext, 'maxRetryAfterMs' | 'now'>,
): number | undefined {
  if (headers === undefined) return undefined;
  const header = (name: string): string | undefined => {
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name) return value.trim();
    }
    return undefined;
  };
  let ms: number | undefined;
  const retryAfterMs = header('retry-after-ms');
  if (retryAfterMs !== undefined && retryAfterMs !== '') ms = Number(retryAfterMs);
  const retryAfter = header('retry-after');
  if ((ms === undefined || !Number.isFinite(ms)) && retryAfter !== undefined && retryAfter !== '') {
    const seconds = Number(retryAfter);
    ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - context.now();
  }
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(0, Math.ceil(ms)), context.maxRetryAfterMs);
}
