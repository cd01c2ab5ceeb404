import { randomBytes } from 'node:crypto';
import { CairnError, SubjectForgottenError, subjectHash, type SubjectKeyring } from '@cairn/sdk';
import type { AnySql } from './db.js';
import { toStoreError } from './errors.js';
import { schemaNames } from './names.js';
import { keyringCurrent } from './sql/keyring-current.js';
import { keyringForget } from './sql/keyring-forget.js';
import { keyringKey } from './sql/keyring-key.js';
import { keyringMigrate } from './sql/keyring-migrate.js';

/** Options of `pgKeyring`. */
export interface PgKeyringOptions {
  /** A `postgres()` instance the caller owns: best on another database than the runs' (see `pgKeyring`). */
  sql: AnySql;
  /** The schema of its one table, `subject_keys`. @defaultValue 'cairn_keys' */
  schema?: string;
}

/** `pgKeyring`: a `SubjectKeyring`, and `migrate` to create its table. */
export interface PgKeyring extends SubjectKeyring {
  /** Creates the schema and table if missing. Safe to run from every process, at every start. */
  migrate(): Promise<void>;
}

/**
 * Per-subject data keys (`aesGcmCodec({ subjects })`) in a Postgres table, shared by every process that opens it:
 * a key is made once per subject, on first use, and `forget` deletes it for all of them (what it keeps of a
 * forgotten subject is a SHA-256 of its id and when it was forgotten). Making a key and forgetting meet on the
 * subject's row, so no key is made again for a subject being forgotten.
 *
 * Forgetting makes a subject's payloads unreadable wherever the keys are not: keep this table on another
 * database than the runs' (or at least out of their backups, and with backups of its own kept briefly), or a
 * backup of both still reads what was forgotten. Each call is a statement: every payload encoded for a subject
 * asks for its key.
 */
export function pgKeyring(options: PgKeyringOptions): PgKeyring {
  const { sql } = options;
  const schema = options.schema ?? 'cairn_keys';
  const { quotedSchema } = schemaNames(schema);
  const table = `${quotedSchema}."subject_keys"`;
  const call = async <T>(operation: string, body: () => Promise<T>): Promise<T> => {
    try {
      return await body();
    } catch (error) {
      const typed = toStoreError(error, operation, schema);
      if (typed.code !== 'SCHEMA_MISMATCH') throw typed;
      throw new CairnError(
        'SCHEMA_MISMATCH',
        `The keyring's table ${table} is missing: run pgKeyring({ sql, schema: '${schema}' }).migrate() first.`,
        { data: typed.data, cause: error },
      );
    }
  };
  return {
    migrate: () => call('create the keyring table', () => keyringMigrate(sql, quotedSchema, table)),
    async current(subject) {
      const hashed = subjectHash(subject);
      // Two reads at most in practice; the bound keeps a server that never shows the row from looping forever.
      for (let asked = 1; ; asked += 1) {
        const found = await call('read a subject key', () =>
          keyringCurrent(
            sql,
            table,
            hashed,
            randomBytes(12).toString('hex'),
            randomBytes(32).toString('base64'),
          ),
        );
        if (found === null) throw new SubjectForgottenError();
        // Made or forgotten by another transaction after this statement's snapshot: asked again, it is seen.
        if (found === undefined && asked < 10) continue;
        if (found === undefined) {
          throw new CairnError(
            'STORE_UNAVAILABLE',
            'Postgres did not show the subject key row it reported as made or forgotten; try again.',
            { retryable: true, data: { operation: 'read a subject key', schema } },
          );
        }
        return { id: found.keyId, key: Buffer.from(found.key, 'base64') };
      }
    },
    async key(id) {
      const key = await call('read a subject key', () => keyringKey(sql, table, id));
      return key === undefined ? undefined : Buffer.from(key, 'base64');
    },
    async forget(subject) {
      await call('forget a subject', () => keyringForget(sql, table, subjectHash(subject)));
    },
  };
}
