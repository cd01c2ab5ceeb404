import { pgStore } from '@cairn/store-pg';
import { useTestDatabase } from '@cairn/testing';
import postgres from 'postgres';
import { describeCairnCommands } from './commands-suite.js';

const database = useTestDatabase({ prefix: 'cairn_cli' });

describeCairnCommands('Postgres', async () => {
  const { url } = database();
  const sql = postgres(url, { max: 4, onnotice: () => undefined });
  const store = pgStore({ sql, schema: 'ops' });
  await store.migrate();
  return {
    store,
    env: { DATABASE_URL: url, CAIRN_SCHEMA: 'ops' },
    another: () => pgStore({ sql, schema: 'ops' }),
    async close() {
      await store.close();
      await sql.end({ timeout: 5 });
    },
  };
});
