import { readFileSync, readdirSync } from 'node:fs';
import { CairnError } from '@cairn/sdk';
import { query, type AnySql, type Db } from './db.js';
import { migrateHint, toStoreError } from './errors.js';
import type { Names } from './names.js';

/** One numbered migration shipped in the package's `sql/` folder. */
export interface Migration {
  version: number;
  name: string;
  /** The SQL with `{{schema}}` and `{{channel}}` still in it. */
  template: string;
}

const folder = new URL('../sql/', import.meta.url);

let cache: readonly Migration[] | undefined;

/** The package's migrations in version order, read once from `sql/NNNNNN_name.sql`. */
export function migrations(): readonly Migration[] {
  cache ??= readdirSync(folder)
    .filter((file) => /^\d{6}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 6)),
      name: file.slice(7, -4),
      template: readFileSync(new URL(file, folder), 'utf8'),
    }));
  return cache;
}

/** The schema version this package reads and writes. */
export function latestVersion(): number {
  return migrations().at(-1)?.version ?? 0;
}

function bookkeeping(names: Names): string {
  return (
    `CREATE SCHEMA IF NOT EXISTS ${names.quotedSchema};\n` +
    `CREATE TABLE IF NOT EXISTS ${names.migrations} (\n` +
    '  version integer PRIMARY KEY,\n  name text NOT NULL,\n  applied_at timestamptz NOT NULL DEFAULT now()\n);\n'
  );
}

function render(migration: Migration, names: Names): string {
  return migration.template
    .replaceAll('{{schema}}', names.quotedSchema)
    .replaceAll('{{channel}}', `'${names.channel}'`);
}

/** The SQL that brings an empty database to the latest version, for users who migrate with their own tool. */
export function renderMigrationSql(names: Names, fromVersion = 0): string {
  const pending = migrations().filter((m) => m.version > fromVersion);
  return [
    fromVersion === 0 ? bookkeeping(names) : '',
    ...pending.map(
      (m) =>
        `-- ${String(m.version).padStart(6, '0')}_${m.name}\n${render(m, names)}\n` +
        `INSERT INTO ${names.migrations} (version, name) VALUES (${m.version}, '${m.name}');\n`,
    ),
  ].join('\n');
}

/** Applies pending migrations in one transaction, serialized across processes by an advisory xact lock. */
export async function migrate(sql: AnySql, names: Names): Promise<{ from: number; to: number }> {
  try {
    return await sql.begin(async (tx) => {
      // "already exists, skipping" and the like are not news to the user: no NOTICE reaches their client.
      await tx.unsafe('SET LOCAL client_min_messages TO warning');
      await tx.unsafe(
        "SELECT pg_advisory_xact_lock(hashtextextended('cairn.migrate:' || $1::text, 0))",
        [names.schema],
      );
      await tx.unsafe(bookkeeping(names)).simple();
      const from = ((
        await query(tx, `SELECT coalesce(max(version), 0) FROM ${names.migrations}`)
      )[0]?.[0] ?? 0) as number;
      for (const migration of migrations()) {
        if (migration.version <= from) continue;
        await tx.unsafe(render(migration, names)).simple();
        await tx.unsafe(
          `INSERT INTO ${names.migrations} (version, name) VALUES ($1::int, $2::text)`,
          [migration.version, migration.name],
        );
      }
      return { from, to: Math.max(from, latestVersion()) };
    });
  } catch (error) {
    throw toStoreError(error, 'migrate', names.schema);
  }
}

/** Fails with `SCHEMA_MISMATCH` (data.run says what to run) unless the schema is at this package's version. */
export async function checkSchema(sql: Db, names: Names): Promise<void> {
  let version: number;
  try {
    const rows = await query(sql, `SELECT coalesce(max(version), 0) FROM ${names.migrations}`);
    version = (rows[0]?.[0] as number | undefined) ?? 0;
  } catch (error) {
    throw toStoreError(error, 'check the schema version', names.schema);
  }
  const expected = latestVersion();
  if (version === expected) return;
  const newer = version > expected;
  throw new CairnError(
    'SCHEMA_MISMATCH',
    newer
      ? `The Cairn schema "${names.schema}" is at version ${version}, newer than this @cairn/store-pg (${expected}): upgrade the package.`
      : `The Cairn schema "${names.schema}" is at version ${version}; this @cairn/store-pg needs ${expected}. Run ${migrateHint(names.schema)}.`,
    {
      data: {
        schema: names.schema,
        version,
        expected,
        run: newer ? 'upgrade @cairn/store-pg' : migrateHint(names.schema),
      },
    },
  );
}
