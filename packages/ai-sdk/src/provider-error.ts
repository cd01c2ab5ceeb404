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
  if (APICallError.isInstance(error)) {
    const { statusCode } = error;
    const retryable = error.isRetryable || isRetryableStatus(statusCode);
    const retryAfterMs = retryable ? retryAfterOf(error.responseHeaders, context) : undefined;
    const status = statusCode === undefined ? '' : ` with HTTP ${statusCode}`;
    return modelFailed(context, `failed${status}: ${error.message}`, {
      retryable,
      data: {
        ...(statusCode === undefined ? {} : { statusCode }),
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      },
      cause: error,
    });
  }
  return modelFailed(context, `failed: ${messageOf(error)}`, { cause: error });
}

/**
 * The retryable `MODEL_FAILED` error of a streamed answer that stopped before its end (no `finish` part): a
 * connection cut short, which a new call may get through.
 */
export function streamCutShort(context: ErrorContext): CairnError {
  return modelFailed(context, 'failed: its stream ended before the answer was finished', {
    retryable: true,
  });
}

function modelFailed(
  context: ErrorContext,
  what: string,
  options: { retryable?: boolean; data?: JsonObject; cause?: unknown },
): CairnError {
  const data: JsonObject = { provider: context.provider, model: context.model, ...options.data };
  return new CairnError('MODEL_FAILED', `${context.provider} model "${context.model}" ${what}`, {
    retryable: options.retryable ?? false,
    data,
    cause: options.cause,
  });
}

/** An error's message: a stream's `error` part often holds the provider's error object, not an `Error`. */
function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null) {
    const { message } = error as { message?: unknown };
    if (typeof message === 'string') return message;
    try {
      return JSON.stringify(error) ?? String(error);
    } catch {
      return String(error);
    }
  }
  return String(error);
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
