import { CairnError } from '@cairn/sdk';

// At most 58 characters: the NOTIFY channel `<schema>_work` must stay within Postgres's 63-byte identifiers.
const identifier = /^[a-z_][a-z0-9_]{0,57}$/;

/** The quoted, validated names of the store's tables in one schema; the only text spliced into SQL. */
export interface Names {
  schema: string;
  quotedSchema: string;
  runs: string;
  journal: string;
  snapshotChunks: string;
  sessions: string;
  signals: string;
  /** A run's stream log: one row per chunk. */
  runStream: string;
  /** `stream_position(run_seq)`: the highest position in an incarnation's stream, read after the row lock. */
  streamPosition: string;
  /** `send_signal(run_id, name, payload, idempotency_key)`: the SQL function behind `signal`. */
  sendSignal: string;
  /** `send_decision(run_id, payload)`: a decision on a held call, checked against the run's wait (`signal`). */
  sendDecision: string;
  /** `replace_payloads(run_id, incarnation, olds, news)`: a run's stored payload strings replaced (key rotation). */
  replacePayloads: string;
  migrations: string;
  /** The LISTEN/NOTIFY channel announcing claimable runs. */
  channel: string;
}

/**
 * Validates a schema name (lowercase letters, digits, `_`, at most 58, not `pg_...`, which Postgres keeps for
 * itself) and quotes the table names in it.
 */
export function schemaNames(schema: string): Names {
  if (!identifier.test(schema) || schema.startsWith('pg_')) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Invalid schema name "${schema}": use lowercase letters, digits and "_", starting with a letter or "_", at most 58 characters, not starting with "pg_".`,
      { data: { schema } },
    );
  }
  const quotedSchema = `"${schema}"`;
  return {
    schema,
    quotedSchema,
    runs: `${quotedSchema}."runs"`,
    journal: `${quotedSchema}."journal"`,
    snapshotChunks: `${quotedSchema}."snapshot_chunks"`,
    sessions: `${quotedSchema}."sessions"`,
    signals: `${quotedSchema}."signals"`,
    runStream: `${quotedSchema}."run_stream"`,
    streamPosition: `${quotedSchema}."stream_position"`,
    sendSignal: `${quotedSchema}."send_signal"`,
    sendDecision: `${quotedSchema}."send_decision"`,
    replacePayloads: `${quotedSchema}."replace_payloads"`,
    migrations: `${quotedSchema}."schema_migrations"`,
    channel: `${schema}_work`,
  };
}
