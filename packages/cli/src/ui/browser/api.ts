/** Reading the page's JSON API. */
import type { ErrorAnswer } from './api-types.js';

/** A failed API request: the HTTP status and the error's stable code (`RUN_NOT_FOUND`...). */
export class ApiRequestError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(message: string, status: number, code: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * GETs `path` and returns its JSON as `T`, which the caller names from `api-types.ts` (the server's answer is
 * trusted to be it: both come from this package). Throws `ApiRequestError` for an error answer.
 */
export async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  const body: unknown = await response.json();
  if (!response.ok) {
    const error = (body as Partial<ErrorAnswer> | null)?.error;
    throw new ApiRequestError(
      error?.message ?? response.statusText,
      response.status,
      error?.code ?? '',
    );
  }
  return body as T;
}
