import { defineAgent, defineTool, isCairnError } from '@cairn/sdk';
import { pgStore } from '@cairn/store-pg';
import { scriptedModel, SimulatedCrash } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { usePgHarness } from './support.js';

// Issue 16, point 4: rows changed behind the store's back. The conformance suite corrupts runs through the
// store's own writes; these change the tables themselves, as a bad restore or a hand-edit would.
const opened = usePgHarness('cairn_corrupted_rows');

/** An agent that refunds four orders, one per trip (a tool that must never run twice). */
function refunder(store: ReturnType<typeof pgStore>, refunds: Record<string, number>) {
  const refund = defineTool({
    name: 'refund',
    description: 'Refunds an order.',
    input: z.object({ order: z.string() }),
    execute: ({ order }) => {
      refunds[order] = (refunds[order] ?? 0) + 1;
      return { refunded: order };
    },
  });
  return defineAgent({
    name: 'refunder',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'refund', args: { order: 'r1' } }] },
      { toolCalls: [{ id: 'c2', name: 'refund', args: { order: 'r2' } }] },
      { toolCalls: [{ id: 'c3', name: 'refund', args: { order: 'r3' } }] },
      { toolCalls: [{ id: 'c4', name: 'refund', args: { order: 'r4' } }] },
      { text: 'refunded' },
    ]),
    tools: [refund],
    durable: { store, leaseMs: 200 },
  });
}

/** Runs the refunder until its process dies as the fourth trip's model call starts (three refunds settled). */
async function stoppedAtFourthTrip(store: ReturnType<typeof pgStore>, runId: string) {
  const refunds: Record<string, number> = {};
  const died = await refunder(store, refunds)
    .execute('refund r1 to r4', {
      runId,
      onBoundary: (boundary) => {
        if (boundary.point === 'effect.before' && boundary.effectId === 'trip-3/model')
          throw new SimulatedCrash(boundary);
      },
    })
    .then(
      () => 'finished',
      (error: unknown) => error,
    );
  expect(died).toBeInstanceOf(SimulatedCrash);
  expect(refunds).toEqual({ r1: 1, r2: 1, r3: 1 });
  await new Promise((resolve) => setTimeout(resolve, 300)); // the dead holder's 200 ms lease runs out
  return refunds;
}

describe('a run whose rows were changed behind the store', () => {
  it('with the last rows of its conversation deleted: SNAPSHOT_INVALID on load, no refund runs again', async () => {
    const { sql, harness } = opened();
    const store = pgStore({ sql, schema: harness.schema });
    const runId = 'lost-tail';
    const refunds = await stoppedAtFourthTrip(store, runId);
    const deleted = await sql.unsafe(
      `delete from "${harness.schema}".snapshot_chunks s using "${harness.schema}".runs r
        where s.run_seq = r.created_seq and r.run_id = $1 and s.idx >= 2`,
      [runId],
    );
    expect(deleted.count).toBeGreaterThan(0);
    const [before] = await sql.unsafe(
      `select status, snapshot, snapshot_version from "${harness.schema}".runs where run_id = $1`,
      [runId],
    );

    const error = await refunder(store, refunds)
      .resume(runId)
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(isCairnError(error), String(error)).toBe(true);
    expect(error).toMatchObject({ code: 'SNAPSHOT_INVALID' });
    expect(refunds).toEqual({ r1: 1, r2: 1, r3: 1 });
    const [after] = await sql.unsafe(
      `select status, snapshot, snapshot_version from "${harness.schema}".runs where run_id = $1`,
      [runId],
    );
    expect(after).toEqual(before);
    await store.close();
  });

  it.each([
    [
      'a journal line that is not JSON',
      `update {runs} set journal = journal || E'{"seq":99,\n' where run_id = $1`,
    ],
    [
      'a snapshot that is not JSON',
      `update {runs} set snapshot = left(snapshot, 20) where run_id = $1`,
    ],
  ])(
    'with %s: SNAPSHOT_INVALID on load and on resume, other runs still listed',
    async (_case, statement) => {
      const { sql, harness } = opened();
      const store = pgStore({ sql, schema: harness.schema });
      const runId = `broken-${_case.length}`;
      const refunds = await stoppedAtFourthTrip(store, runId);
      await sql.unsafe(statement.replace('{runs}', `"${harness.schema}".runs`), [runId]);

      await expect(store.load(runId)).rejects.toMatchObject({ code: 'SNAPSHOT_INVALID' });
      await expect(refunder(store, refunds).resume(runId)).rejects.toMatchObject({
        code: 'SNAPSHOT_INVALID',
      });
      expect(refunds).toEqual({ r1: 1, r2: 1, r3: 1 });
      const listed = await store.list();
      expect(listed.map((run) => run.runId)).toContain(runId);
      await store.close();
    },
  );
});
