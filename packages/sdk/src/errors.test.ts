import { describe, expect, it } from 'vitest';
import {
  AgentDriftError,
  CairnError,
  deserializeError,
  isCairnError,
  LeaseLostError,
  RunSuspendedError,
  serializeError,
} from './errors.js';

describe('errors', () => {
  it('are recognised across copies of the package through a global brand', () => {
    const error = new AgentDriftError('r', 'aaa', 'bbb');
    // A structurally separate object carrying the same global brands, as a second package copy would make.
    const foreign = Object.create(null) as Record<symbol, unknown>;
    foreign[Symbol.for('@cairn/sdk/error:CairnError')] = true;
    foreign[Symbol.for('@cairn/sdk/error:AgentDriftError')] = true;
    expect(error).toBeInstanceOf(CairnError);
    expect(isCairnError(foreign)).toBe(true);
    expect(foreign instanceof AgentDriftError).toBe(true);
    expect(foreign instanceof LeaseLostError).toBe(false);
    expect(isCairnError(new Error('plain'))).toBe(false);
  });

  it('round-trip through their stored form with class, code and typed fields', () => {
    const stored = JSON.parse(
      JSON.stringify(serializeError(new AgentDriftError('run-1', 'aaa', 'bbb'))),
    );
    const back = deserializeError(stored);
    expect(back).toBeInstanceOf(AgentDriftError);
    expect(back).toMatchObject({
      code: 'AGENT_DRIFT',
      runId: 'run-1',
      stored: 'aaa',
      current: 'bbb',
    });
    expect(back.message).toContain('force: true');
  });

  it('keep the cause chain and mark plain errors as unknown', () => {
    const suspended = new RunSuspendedError(
      'r',
      new CairnError('STORE_UNAVAILABLE', 'down', { retryable: true }),
    );
    const back = deserializeError(serializeError(suspended));
    expect(back).toBeInstanceOf(RunSuspendedError);
    expect(back.cause).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      retryable: true,
      message: 'down',
    });
    expect(serializeError(new TypeError('x'))).toEqual({
      name: 'TypeError',
      code: 'UNKNOWN',
      message: 'x',
      retryable: false,
    });
    expect(deserializeError(serializeError('text')).code).toBe('RUN_FAILED');
  });
});
