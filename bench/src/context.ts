import type { Sql } from 'postgres';
import type { BenchConfig } from './config.js';

/** What every row gets: the workload size, the database, and a connection for counters. */
export interface BenchContext {
  config: BenchConfig;
  /** URL of the bench's own database. */
  url: string;
  database: string;
  /** One connection to the bench database, for counters and setup; rows never end it. */
  admin: Sql;
  /** Progress on stderr, so stdout keeps only the table. */
  log(message: string): void;
}
