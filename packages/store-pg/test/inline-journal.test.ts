import type { JournalEntry } from '@cairn/sdk';
import { describe, expect, it } from 'vitest';
import { usePgHarnessPerTest } from './support.js';

const pg = usePgHarnessPerTest('cairn_inline_journal');

const long = 60_000;
const definitions = [{ kind: 'agent', name: 'n' }];
const entry = (seq: number, value: string): JournalEntry => ({
  seq,
  type: 'settled',
  effectId: `e${seq}`,
  at: seq,
  outcome: { status: 'ok', value },
});
const seqs = (journal: readonly JournalEntry[] | undefined) => journal?.map((e) => e.seq);

describe('the journal since the checkpoint, kept in the run row and spilled when large', () => {
  it('reads entries from the row and the journal table back in seq order, across checkpoints', async () => {
    const { sql, schema, store } = pg.harness();
    const s = store();
    await s.create({ runId: 'r', kind: 'agent', name: 'n', signature: 's', snapshot: {} });
    const lease = (await s.acquire('r', { owner: 'w', ttlMs: long }))!;
    const big = 'x'.repeat(4_000);
    const lone = `half ${'😀'.slice(0, 1)} and nul \u0000`;
    await s.append(lease, [entry(1, 'small'), entry(2, 'small')]);
    await s.append(lease, [entry(3, big)]); // does not fit in the row
    await s.append(lease, [entry(4, lone), entry(5, 'small')]);
    await s.append(lease, [entry(6, big), entry(7, 'small')]);
    const all = await s.load('r');
    expect(seqs(all?.journal)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(all?.journal[2]).toMatchObject({ outcome: { status: 'ok', value: big } });
    expect(all?.journal[3]).toMatchObject({ outcome: { status: 'ok', value: lone } });
    const spilled = await sql.unsafe(`SELECT seq FROM "${schema}".journal ORDER BY seq`);
    expect(spilled.map((row) => Number(row.seq))).toEqual([3, 6, 7]);

    // A checkpoint that accounts for seq 4 keeps what came after it, wherever it is.
    await s.save(lease, { status: 'running', signature: 's', snapshot: { at: 4 }, journalSeq: 4 });
    expect(seqs((await s.load('r'))?.journal)).toEqual([5, 6, 7]);
    // An append of entries the checkpoint covered (a statement delivered late) is refused, storing nothing.
    await expect(s.append(lease, [entry(4, 'again')])).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    expect(seqs((await s.load('r'))?.journal)).toEqual([5, 6, 7]);
    const [claimed] = await s.claim!({ owner: 'other', ttlMs: long, limit: 1, definitions });
    expect(claimed).toBeUndefined(); // held by w: nothing to claim

    await s.save(lease, { status: 'running', signature: 's', snapshot: { at: 7 }, journalSeq: 7 });
    expect((await s.load('r'))?.journal).toEqual([]);
    const [row] = await sql.unsafe(`SELECT journal FROM "${schema}".runs WHERE run_id = 'r'`);
    expect(row?.journal).toBe('');
  });

  it('hands the journal to the claim that takes the run over', async () => {
    const { store } = pg.harness();
    // Lease-only liveness: a lease that ran out is enough to take the run.
    const crashed = store({ liveness: 'lease' });
    await crashed.create({ runId: 'c', kind: 'agent', name: 'n', signature: 's', snapshot: {} });
    const lease = (await crashed.acquire('c', { owner: 'w', ttlMs: 200 }))!;
    await crashed.append(lease, [entry(1, 'model'), entry(2, 'y'.repeat(3_000)), entry(3, 'tool')]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const taker = store({ liveness: 'lease' });
    const [taken] = await taker.claim!({ owner: 'taker', ttlMs: long, limit: 1, definitions });
    expect(seqs(taken?.claimed?.journal)).toEqual([1, 2, 3]);
    expect(taken?.claimed?.journal[1]).toMatchObject({
      outcome: { status: 'ok', value: 'y'.repeat(3_000) },
    });
  });
});
