import { CairnError } from '@cairn/sdk';

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

/** The quoted, validated names of the store's tables in one schema; the only text spliced into SQL. */
export interface Names {
  schema: string;
  quotedSchema: string;
  runs: string;
  journal: string;
  snapshotChunks: string;
  sessions: string;
  migrations: string;
  /** The LISTEN/NOTIFY channel announcing claimable runs. */
  channel: string;
}

/** Validates a schema name (lowercase letters, digits, `_`, at most 63) and quotes the table names in it. */
export function schemaNames(schema: string): Names {
  if (!identifier.test(schema)) {
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Invalid schema name "${schema}": use lowercase letters, digits and "_", starting with a letter or "_", at most 63 characters.`,
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
    migrations: `${quotedSchema}."schema_migrations"`,
    channel: `${schema}_work`,
  };
}
