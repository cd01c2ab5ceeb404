import { CairnError, isCairnError, type JsonObject } from '@cairn/sdk';

/** SQLSTATEs a retry may fix: the connection, the server's state or a conflict with another transaction. */
const retryableStates = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '53000', // insufficient_resources
  '53100', // disk_full
  '53200', // out_of_memory: "out of shared memory" when the lock table is full
  '53300', // too_many_connections
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout)
  '57P01', // admin_shutdown: pg_terminate_backend or a server shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '58000', // system_error
]);

/** SQLSTATEs that mean the store's tables are missing or of another shape: migrate. */
const schemaStates = new Set([
  '3F000', // invalid_schema_name
  '42P01', // undefined_table
  '42703', // undefined_column
  '42883', // undefined_function
]);

/** Client-side codes of `postgres` and Node's sockets that mean the connection is gone or never came up. */
const connectionCodes = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
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

function field(error: unknown, name: string): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const value = (error as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** What the user runs to bring a schema to this package's version. */
export function migrateHint(schema: string): string {
  return `await pgStore({ sql, schema: '${schema}' }).migrate(), or apply migrationSql({ schema: '${schema}' }) with your migration tool`;
}

/**
 * Turns anything a driver call threw into a `CairnError`: retryable `STORE_UNAVAILABLE` when the connection
 * or the server's state is at fault, `STORE_FAILED` otherwise. Cairn errors pass through; the driver's own
 * error object never leaves this package (its code and message are kept in `data`).
 */
export function toStoreError(
  error: unknown,
  operation: string,
  schema: string,
  runId?: string,
): CairnError {
  if (isCairnError(error)) return error;
  const code = field(error, 'code');
  const message = field(error, 'message') ?? String(error);
  const data: JsonObject = { operation, schema, driverMessage: message };
  if (runId !== undefined) data.runId = runId;
  const ofRun = runId === undefined ? '' : ` of run "${runId}"`;
  if (code !== undefined) data.driverCode = code;
  const isServerError = field(error, 'severity') !== undefined;

  if (isServerError && code !== undefined && schemaStates.has(code)) {
    data.run = migrateHint(schema);
    return new CairnError(
      'SCHEMA_MISMATCH',
      `The Cairn schema "${schema}" is missing or out of date (${message}). Run ${migrateHint(schema)}.`,
      { data },
    );
  }
  if (code === 'CONNECTION_ENDED') {
    return new CairnError(
      'STORE_FAILED',
      `Cannot ${operation}: the postgres() instance given to pgStore was ended.`,
      { data },
    );
  }
  const retryable =
    code !== undefined &&
    (connectionCodes.has(code) ||
      retryableStates.has(code) ||
      (isServerError && code.startsWith('08')));
  if (retryable) {
    return new CairnError(
      'STORE_UNAVAILABLE',
      `Postgres is unavailable to ${operation}${ofRun}: ${message}`,
      {
        retryable: true,
        data,
      },
    );
  }
  return new CairnError('STORE_FAILED', `Postgres failed to ${operation}${ofRun}: ${message}`, {
    data,
  });
}
