import { describe } from 'vitest';
import { useHarness } from './context.js';
import type { StoreConformanceOptions, StoreHarnessFactory } from './harness.js';
import { childTests } from './child-tests.js';
import { corruptionTests } from './corruption-tests.js';
import { decisionTests } from './decision-tests.js';
import { fencingTests } from './fencing-tests.js';
import { hostileInputTests } from './hostile-input-tests.js';
import { leaseTests } from './lease-tests.js';
import { listPagingTests, payloadRewriteTests } from './payload-rewrite-tests.js';
import { receiptTests } from './receipt-tests.js';
import { replayTests } from './replay-tests.js';
import { snapshotTests } from './snapshot-tests.js';
import { stallTests } from './stall-tests.js';
import { streamTests } from './stream-tests.js';
import { checkpointStreamTests } from './checkpoint-stream-tests.js';
import { waitOrderTests } from './wait-order-tests.js';
import { waitRecoveryTests } from './wait-recovery-tests.js';
import { waitTests } from './wait-tests.js';
import { workerTests } from './worker-tests.js';

/**
 * Registers the whole store contract as vitest tests under `describe(name)`: every test gets a fresh
 * harness from `factory`. Memory, Postgres and Redis stores, and third-party ones, all run it.
 */
export function describeStoreConformance(
  name: string,
  factory: StoreHarnessFactory,
  options: StoreConformanceOptions = {},
): void {
  describe(name, () => {
    const ctx = useHarness(factory);
    describe('snapshots', () => snapshotTests(ctx));
    describe('leases', () => leaseTests(ctx, options.claimers ?? 8));
    describe('fencing', () => fencingTests(ctx));
    describe('child runs', () => childTests(ctx));
    describe('workers', () => workerTests(ctx));
    describe('corrupted runs', () => corruptionTests(ctx));
    describe('hostile input', () => hostileInputTests(ctx));
    describe('conversation replay', () => replayTests(ctx));
    describe('waits and mailboxes', () => waitTests(ctx));
    describe('decisions on held calls', () => decisionTests(ctx));
    describe('save receipts', () => receiptTests(ctx));
    describe('stalled attempts', () => stallTests(ctx));
    describe('runs that wait: signal order', () => waitOrderTests(ctx));
    describe('runs that wait: recovery', () => waitRecoveryTests(ctx));
    describe('stream logs', () => streamTests(ctx));
    describe('stream chunks with writes', () => checkpointStreamTests(ctx));
    describe('listing a page at a time', () => listPagingTests(ctx));
    describe('payloads replaced in place (key rotation)', () => payloadRewriteTests(ctx));
  });
}
