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

  it('are stored whatever was thrown, with a cause chain cut where it loops or past eight causes', () => {
    const loop = new Error('loop');
    loop.cause = new Error('inner', { cause: loop });
    expect(serializeError(loop)).toEqual({
      name: 'Error',
      code: 'UNKNOWN',
      message: 'loop',
      retryable: false,
      cause: { name: 'Error', code: 'UNKNOWN', message: 'inner', retryable: false },
    });
    let long = new Error('0');
    for (let i = 1; i < 20; i += 1) long = new Error(String(i), { cause: long });
    let depth = 0;
    for (let at = serializeError(long).cause; at !== undefined; at = at.cause) depth += 1;
    expect(depth).toBe(8);
    expect(serializeError(Object.create(null))).toMatchObject({ code: 'UNKNOWN', message: '{}' });
    expect(serializeError(Symbol('s')).message).toBe('Symbol(s)');
  });

  it('come back from stored data that names other fields, or a prototype key as code, unchanged', () => {
    const lost = deserializeError({
      name: 'LeaseLostError',
      code: 'LEASE_LOST',
      message: 'lost',
      retryable: false,
      data: JSON.parse('{"runId":"r","epoch":3,"code":"X","message":"m","__proto__":{"x":1}}'),
    });
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toMatchObject({ code: 'LEASE_LOST', message: 'lost', runId: 'r', epoch: 3 });
    for (const code of ['__proto__', 'constructor', 'toString']) {
      const back = deserializeError({ name: 'E', code, message: 'm', retryable: false });
      expect(back).toBeInstanceOf(CairnError);
      expect(back).toBeInstanceOf(Error);
      expect(back.code).toBe(code);
    }
  });
});
