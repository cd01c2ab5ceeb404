import { CairnError, isCairnError, type JsonObject } from '@cairn/sdk';

/**
 * Reply prefixes of a server that is loading, failing over, out of memory or busy, or of a cluster whose slots
 * are moving (`MOVED`/`ASK` reach the store only once ioredis stopped following them): a retry may succeed.
 */
const retryableReplies = new Set([
  'LOADING',
  'BUSY',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'MOVED',
  'ASK',
  'MASTERDOWN',
  'READONLY',
  'NOREPLICAS',
  'MISCONF',
  'OOM',
]);

/** Node socket codes that mean the connection is gone or never came up. */
const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** ioredis errors that are about the connection, not the command. */
const connectionNames = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);
// ioredis Cluster gives up following redirections ("Too many Cluster redirections. Last error: ...") while a
// failover or a reshard is under way, whatever the last error inside was: a transition, so retryable.
const connectionMessages =
  /Too many Cluster redirections|Connection is closed|Stream isn't writeable|Command timed out|None of startup nodes|refresh slots cache|Connection is in (subscriber|monitoring) mode/i;

function field(error: unknown, name: string): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const value = (error as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** A retryable `STORE_UNAVAILABLE` raised by the store itself (client offline, no answer in time). */
export function unavailable(operation: string, reason: string, data: JsonObject = {}): CairnError {
  return new CairnError('STORE_UNAVAILABLE', `Redis is unavailable to ${operation}: ${reason}`, {
    retryable: true,
    data: { operation, ...data },
  });
}

/**
 * Turns anything the client threw into a `CairnError`: retryable `STORE_UNAVAILABLE` when the connection or
 * the server's state is at fault, `STORE_FAILED` otherwise (a script error, a key of the wrong type). Cairn
 * errors pass through; the client's own error never leaves this package (its name and message are kept in
 * `data`).
 */
export function toStoreError(error: unknown, operation: string, prefix: string): CairnError {
  if (isCairnError(error)) return error;
  const name = field(error, 'name') ?? 'Error';
  const message = field(error, 'message') ?? String(error);
  const code = field(error, 'code');
  const data: JsonObject = { operation, prefix, driverName: name, driverMessage: message };
  if (code !== undefined) data.driverCode = code;

  const replyPrefix = name === 'ReplyError' ? message.split(' ', 1)[0] : undefined;
  const retryable =
    (replyPrefix !== undefined && retryableReplies.has(replyPrefix)) ||
    (replyPrefix === undefined &&
      ((code !== undefined && connectionCodes.has(code)) ||
        connectionNames.has(name) ||
        connectionMessages.test(message)));
  if (retryable) return unavailable(operation, message, data);
  return new CairnError('STORE_FAILED', `Redis failed to ${operation}: ${message}`, { data });
}
