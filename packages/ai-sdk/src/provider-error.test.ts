import { APICallError } from '@ai-sdk/provider';
import { isCairnError } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { retryAfterOf, toCairnError } from './provider-error.js';

const now = Date.UTC(2026, 0, 1);
const context = {
  provider: 'openai.chat',
  model: 'gpt-x',
  maxRetryAfterMs: 60_000,
  now: () => now,
};

function apiError(statusCode: number | undefined, responseHeaders?: Record<string, string>) {
  return new APICallError({
    message: 'provider said no',
    url: 'https://api.example/v1/chat',
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode }),
    ...(responseHeaders === undefined ? {} : { responseHeaders }),
  });
}

describe('toCairnError', () => {
  it.each([429, 500, 503, 529, 408])('makes HTTP %i retryable', (status) => {
    const error = toCairnError(apiError(status), context);
    expect(error).toMatchObject({
      code: 'MODEL_FAILED',
      retryable: true,
      data: { provider: 'openai.chat', model: 'gpt-x', statusCode: status },
    });
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it.each([400, 401, 403, 404, 422])('makes HTTP %i final', (status) => {
    expect(toCairnError(apiError(status), context)).toMatchObject({
      code: 'MODEL_FAILED',
      retryable: false,
    });
  });

  it('keeps the retry-after of a retryable error as data.retryAfterMs', () => {
    const error = toCairnError(apiError(429, { 'retry-after': '7' }), context);
    expect(error.data.retryAfterMs).toBe(7000);
    expect(JSON.parse(JSON.stringify(error.data))).toEqual(error.data);
  });

  it('makes any other error a final MODEL_FAILED and passes Cairn errors through', () => {
    const other = toCairnError(new TypeError('boom'), context);
    expect(other).toMatchObject({ code: 'MODEL_FAILED', retryable: false });
    expect(isCairnError(other)).toBe(true);
    expect(toCairnError(other, context)).toBe(other);
  });
});

describe('retryAfterOf', () => {
  it('prefers retry-after-ms, then reads retry-after as seconds or an HTTP date', () => {
    expect(retryAfterOf({ 'retry-after-ms': '1500.2', 'retry-after': '9' }, context)).toBe(1501);
    expect(retryAfterOf({ 'Retry-After': '2' }, context)).toBe(2000);
    expect(retryAfterOf({ 'retry-after': new Date(now + 30_000).toUTCString() }, context)).toBe(
      30_000,
    );
  });

  it('cuts long waits, floors past dates at zero and ignores what it cannot read', () => {
    expect(retryAfterOf({ 'retry-after': '3600' }, context)).toBe(60_000);
    expect(retryAfterOf({ 'retry-after': new Date(now - 5_000).toUTCString() }, context)).toBe(0);
    expect(retryAfterOf({ 'retry-after': 'soon' }, context)).toBeUndefined();
    expect(retryAfterOf({}, context)).toBeUndefined();
    expect(retryAfterOf(undefined, context)).toBeUndefined();
  });
});
