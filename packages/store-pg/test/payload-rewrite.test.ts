import type { Checkpoint, JsonValue, Lease } from '@cairn/sdk';
import type { PgStore } from '@cairn/store-pg';
import { describe, expect, it } from 'vitest';
import { sleep, usePgHarness } from './support.js';

const opened = usePgHarness('cairn_payload_rewrite');

/** A string as an encoded payload looks, and what a key rotation moves it to. */
const payload = (label: string) => `cairn:1:app@k1:${label}-${'A'.repeat(40)}`;
const moved = (label: string) => `cairn:1:app@k2:${label}-${'B'.repeat(40)}`;

/** A conversation long enough to be kept in snapshot_chunks; `content(n)` is message n's text. */
function snapshotOf(length: number, content: (n: number) => string = (n) => payload(`m${n}`)) {
  return {
    state: { messages: Array.from({ length }, (_, n) => ({ role: 'user', content: content(n) })) },
  };
}

const running = (snapshot: JsonValue, journalSeq = 0): Checkpoint => ({
  status: 'running',
  signature: 's',
  journalSeq,
  snapshot,
});

async function heldRun(store: PgStore, runId: string, snapshot: JsonValue): Promise<Lease> {
  await store.create({ runId, kind: 'agent', name: 'a', signature: 's', snapshot });
  return (await store.acquire(runId, { owner: 'holder', ttlMs: 60_000 }))!;
}

describe('replacePayloads and the rows a holder keeps', () => {
  it('a holder that saves more after its earlier messages were replaced loads back exactly', async () => {
    const { harness } = opened();
    const holder = harness.store();
    // Loads go through another instance: a load by the holder's would record the rows as it read them.
    const reader = harness.store();
    const lease = await heldRun(holder, 'chunked', snapshotOf(1));
    // Rows of messages 0-29 and 30-31, as two checkpoints wrote them.
    await holder.save(lease, running(snapshotOf(30)));
    await holder.save(lease, running(snapshotOf(32)));

    const rotated = new Map([
      [payload('m5'), moved('m5')],
      [payload('m31'), moved('m31')],
    ]);
    expect(await reader.replacePayloads('chunked', lease.incarnation, rotated)).toBe(2);

    // The holder's state still holds the strings it wrote: it sends only messages 32 and 33, and keeps the rows
    // that now hold the replaced ones.
    const rotatedText = (n: number) => (n === 5 || n === 31 ? moved(`m${n}`) : payload(`m${n}`));
    await holder.save(lease, running(snapshotOf(34)));
    expect((await reader.load('chunked'))!.run.snapshot).toEqual(snapshotOf(34, rotatedText));

    // A change in place rewrites from the row that holds it (30-31): what it writes is the holder's own.
    const changed = (n: number) => (n === 31 ? payload('m31-edited') : payload(`m${n}`));
    await holder.save(lease, running(snapshotOf(35, changed)));
    expect((await reader.load('chunked'))!.run.snapshot).toEqual(
      snapshotOf(35, (n) => (n === 5 ? moved('m5') : changed(n))),
    );

    // Another instance that loads the run and goes on writes from what it read.
    await holder.release(lease);
    const next = harness.store();
    const taken = (await next.acquire('chunked', { owner: 'next', ttlMs: 60_000 }))!;
    const loaded = (await next.load('chunked'))!.run.snapshot as ReturnType<typeof snapshotOf>;
    const more = {
      state: { messages: [...loaded.state.messages, { role: 'user', content: payload('m35') }] },
    };
    await next.save(taken, running(more));
    expect((await reader.load('chunked'))!.run.snapshot).toEqual(more);
    await next.release(taken);
  });

  it('keeps and replaces consumed signals that have a key, not those without one (deleted when consumed)', async () => {
    const { harness } = opened();
    const store = harness.store();
    const lease = await heldRun(store, 'signals', { step: 0 });
    await store.signal('signals', { name: 'note', payload: payload('unkeyed') });
    await store.signal('signals', {
      name: 'note',
      payload: { text: payload('keyed') },
      idempotencyKey: 'note-2',
    });
    await store.save(lease, { ...running({ step: 1 }), signalsConsumed: 2 });
    await store.signal('signals', { name: 'note', payload: [payload('mailbox')] });

    const kept = await store.signalPayloads('signals');
    expect(kept).toEqual([
      { name: 'note', payload: { text: payload('keyed') } },
      { name: 'note', payload: [payload('mailbox')] },
    ]);
    const replacements = new Map(
      ['unkeyed', 'keyed', 'mailbox'].map((label) => [payload(label), moved(label)]),
    );
    expect(await store.replacePayloads('signals', lease.incarnation, replacements)).toBe(2);
    expect(await store.signalPayloads('signals')).toEqual([
      { name: 'note', payload: { text: moved('keyed') } },
      { name: 'note', payload: [moved('mailbox')] },
    ]);
    // A later signal with the kept key is still a duplicate: keys are not payloads.
    expect(
      await store.signal('signals', { name: 'note', payload: 1, idempotencyKey: 'note-2' }),
    ).toMatchObject({ duplicate: true });
    await store.release(lease);
  });

  it('replaces string values only: not the same text inside another string, nor an object key', async () => {
    const { harness } = opened();
    const store = harness.store();
    const snapshot = {
      value: payload('x'),
      quoted: `he said "${payload('x')}`,
      [payload('x')]: [payload('x'), `${payload('x')}\\`],
    };
    await store.create({ runId: 'exact', kind: 'agent', name: 'a', signature: 's', snapshot });
    const { incarnation } = (await store.load('exact'))!.run;
    expect(
      await store.replacePayloads('exact', incarnation, new Map([[payload('x'), moved('x')]])),
    ).toBe(1);
    expect((await store.load('exact'))!.run.snapshot).toEqual({
      value: moved('x'),
      quoted: `he said "${payload('x')}`,
      [payload('x')]: [moved('x'), `${payload('x')}\\`],
    });
  });

  it('replace_payloads, called in SQL, replaces each string once (a swap swaps)', async () => {
    const { harness, sql } = opened();
    const store = harness.store();
    const snapshot = { a: payload('a'), b: payload('b') };
    await store.create({ runId: 'swap', kind: 'agent', name: 'a', signature: 's', snapshot });
    const { incarnation } = (await store.load('swap'))!.run;
    const [row] = await sql.unsafe<Array<{ found: number }>>(
      `SELECT "${harness.schema}".replace_payloads('swap', $1::text, $2::text[], $3::text[]) AS found`,
      [incarnation, [payload('a'), payload('b')], [payload('b'), payload('a')]],
    );
    expect(row!.found).toBe(2);
    expect((await store.load('swap'))!.run.snapshot).toEqual({ a: payload('b'), b: payload('a') });
    await expect(
      sql.unsafe(
        `SELECT "${harness.schema}".replace_payloads('swap', $1::text, $2::text[], $3::text[])`,
        [incarnation, [`${payload('a')}"`], [payload('b')]],
      ),
    ).rejects.toMatchObject({ code: '22023' });
  });

  it('replaces journal rows a checkpoint superseded too, without counting them', async () => {
    const { harness, sql } = opened();
    const store = harness.store();
    const lease = await heldRun(store, 'superseded', { step: 0 });
    // Too long for the row's inline journal: it goes to the journal table.
    const long = { text: payload('long'), padding: 'x'.repeat(2_000) };
    await store.append(lease, [
      { seq: 1, type: 'settled', effectId: 'e', at: 1, outcome: { status: 'ok', value: long } },
    ]);
    await store.save(lease, running({ step: 1 }, 1));
    const replacements = new Map([[payload('long'), moved('long')]]);
    expect(await store.replacePayloads('superseded', lease.incarnation, replacements)).toBe(0);
    const rows = await sql.unsafe<Array<{ entry: string }>>(
      `SELECT entry FROM "${harness.schema}".journal WHERE run_id = 'superseded'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.entry).toContain(moved('long'));
    await store.release(lease);
  });

  it('waits for a holder’s write in flight and replaces what it left, not what it overwrote', async () => {
    const { harness, sql } = opened();
    const store = harness.store();
    const lease = await heldRun(store, 'in-flight', { note: payload('first') });
    const replacements = new Map([
      [payload('first'), moved('first')],
      [payload('second'), moved('second')],
    ]);
    let replaced: Promise<number> | undefined;
    await sql.begin(async (tx) => {
      // A write of the holder's, in flight: it holds the run's row as a checkpoint does.
      await tx.unsafe(
        `SELECT 1 FROM "${harness.schema}".runs WHERE run_id = 'in-flight' FOR UPDATE`,
      );
      replaced = store.replacePayloads('in-flight', lease.incarnation, replacements);
      for (let waited = 0; ; waited += 1) {
        const [blocked] = await sql<Array<{ n: number }>>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%replace_payloads%'`;
        if (blocked!.n > 0) break;
        if (waited > 200) throw new Error('replacePayloads never waited for the row');
        await sleep(10);
      }
      await tx.unsafe(
        `UPDATE "${harness.schema}".runs SET snapshot = $1::text WHERE run_id = 'in-flight'`,
        [JSON.stringify({ note: payload('second') })],
      );
    });
    // It read after the write committed: the string written over is not found, the one written is.
    expect(await replaced).toBe(1);
    expect((await store.load('in-flight'))!.run.snapshot).toEqual({ note: moved('second') });
    await store.release(lease);
  });
});
