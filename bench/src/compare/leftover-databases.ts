import postgres from 'postgres';

/**
 * Drops the databases a bench child left behind when a signal killed it: the bench has no signal handler, so
 * it never reached its own `drop()`. `createTestDatabase` names them `cairn_bench_<pid>_<hex>` (and the DBOS
 * row adds `_dbos`), so the child's pid finds them. Called right after that child exited, while its pid cannot
 * yet name another bench's databases.
 */
export async function dropLeftoverDatabases(url: string, pid: number): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    const rows = await sql<Array<{ datname: string }>>`
      SELECT datname FROM pg_database WHERE datname LIKE ${`cairn\\_bench\\_${pid}\\_%`}`;
    for (const { datname } of rows)
      await sql.unsafe(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    return rows.map((row) => row.datname);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
