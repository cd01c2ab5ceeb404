import { Buffer } from 'node:buffer';
import { replaceStrings, type JsonValue, type NewRun, type RunWait } from '@cairn/sdk';
import { expect, it } from 'vitest';
// Ties in creation order cannot be made through the store: the test writes them into the layout by hand.
import { bucketOf } from '../src/keys.js';
import {
  describeOnNodeAndCluster,
  type OpenedStore,
  type StoreOptions,
} from './node-and-cluster.js';
import { noRedisServer } from './redis-server.js';
import { skippedBecause } from './support.js';

// What the conformance suite cannot see of key rotation and paging on Redis: decisions Lua's cjson wrote (a `/`
// kept as `\/`), string values alone replaced (not an object key, not text after an escaped quote), the TTLs of
// a settled run's journal and stream (which a rewrite removes and adds again), and runs created in one microsecond,
// paged exactly. On a single node and on a one-node Cluster.

const long = 60_000;
const run = (runId: string, snapshot: JsonValue = null): NewRun => ({
  runId,
  kind: 'agent',
  name: 'rewrite',
  signature: 's',
  snapshot,
});
/** An encoded payload as the sdk's codecs write it: base64, so it may hold `/`. */
const encoded = (key: string, label: string) =>
  `cairn:1:aes-gcm@${key}:${label}/x+y/${'Q'.repeat(24)}`;
const hash = '0'.repeat(63) + '1';

function rewriteTests(open: (options?: StoreOptions) => Promise<OpenedStore>): void {
  it("finds a decision's strings holding '/', which Lua's cjson kept as '\\/', and replaces them", async () => {
    const { store, admin, keys } = await open();
    await store.create(run('decided'));
    const lease = (await store.acquire('decided', { owner: 'w', ttlMs: long }))!;
    const wait: RunWait = {
      until: null,
      signals: ['cairn.approval'],
      detail: {
        approvals: [{ callId: 'c1', tool: 't', args: {}, argsHash: hash, deadline: null }],
      },
    };
    await store.save(lease, {
      status: 'waiting',
      signature: 's',
      snapshot: null,
      journalSeq: 0,
      release: true,
      wait,
    });
    const by = encoded('k1', 'by');
    await store.signal('decided', {
      name: 'cairn.approval',
      payload: { callId: 'c1', approved: true, argsHash: hash, by },
    });
    const mailbox = Object.values(await admin.hgetall(keys.run('decided').mailbox)).join('\n');
    expect(mailbox).toContain(by.replaceAll('/', '\\/'));
    expect(mailbox).not.toContain(`"${by}"`);

    const to = encoded('k2', 'by');
    const incarnation = (await store.load('decided'))!.run.incarnation;
    expect(await store.replacePayloads('decided', incarnation, new Map([[by, to]]))).toBe(1);
    const kept = await store.signalPayloads('decided');
    expect(kept).toHaveLength(2);
    for (const signal of kept) expect(signal).toMatchObject({ payload: { by: to } });
    expect((await store.mailbox('decided'))[0]?.payload).toMatchObject({ by: to });
    // The standing decision answers a repeat with the new string.
    const repeat = await store.signal('decided', {
      name: 'cairn.approval',
      payload: { callId: 'c1', approved: true, argsHash: hash },
    });
    expect(repeat).toMatchObject({ duplicate: true, decision: { by: to } });
  });

  it('replaces exactly the string values the memory store would: no object key, no text after an escaped quote', async () => {
    const { store } = await open();
    const from = encoded('k1', 'note');
    const snapshot = {
      quoted: `say "${from}`,
      ends: `${from}"`,
      plain: from,
      list: [from, { [from]: from }],
    };
    await store.create(run('exact', snapshot));
    const replacements = new Map([[from, encoded('k2', 'note')]]);
    const incarnation = (await store.load('exact'))!.run.incarnation;
    expect(await store.replacePayloads('exact', incarnation, replacements)).toBe(1);
    // The memory store's rule: string values (object keys aside), not text.
    expect((await store.load('exact'))!.run.snapshot).toEqual(
      replaceStrings(snapshot, replacements, new Set()),
    );
  });

  it("keeps a settled run's stream ids and fields, and the TTLs of its journal and stream", async () => {
    const { store, admin, keys } = await open({ settledTtlMs: long });
    const own = keys.run('settled');
    await store.create(run('settled'));
    const lease = (await store.acquire('settled', { owner: 'w', ttlMs: long }))!;
    const from = encoded('k1', 'value');
    const to = encoded('k2', 'value');
    // One journal entry: removing it before adding its new form would empty the set and lose its TTL.
    await store.append(lease, [
      { seq: 1, type: 'settled', effectId: 'e', at: 1, outcome: { status: 'ok', value: from } },
    ]);
    await store.appendStream(lease, [
      { position: 1, unit: 'u', part: { type: 'text', text: 'hello' }, at: 10 },
      { position: 2, unit: 'u', part: { type: 'text', text: from }, at: 20 },
      { position: 3, unit: 'v', part: { type: 'text', text: 'bye' }, at: 30 },
    ]);
    await store.save(lease, {
      status: 'completed',
      signature: 's',
      snapshot: { last: from },
      output: from,
      journalSeq: 0,
      release: true,
    });
    const before = await admin.xrange(own.stream, '-', '+');
    expect(await store.replacePayloads('settled', lease.incarnation, new Map([[from, to]]))).toBe(
      1,
    );
    expect(await admin.xrange(own.stream, '-', '+')).toEqual(
      before.map(([id, fields]) => [id, fields.map((field) => field.replace(from, to))]),
    );
    for (const key of [own.run, own.journal, own.stream]) {
      const ttl = await admin.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(long);
    }
    const loaded = (await store.load('settled'))!;
    expect(loaded.journal).toEqual([
      { seq: 1, type: 'settled', effectId: 'e', at: 1, outcome: { status: 'ok', value: to } },
    ]);
    expect(loaded.run).toMatchObject({ output: to, snapshot: { last: to }, status: 'completed' });
    // The stream takes appends after its rebuild as before (its last id is the last entry's).
    expect(await store.streamPosition('settled')).toBe(3);
  });

  it('pages exactly through runs created in the same microsecond, in the order of their ids’ bytes', async () => {
    const { store, admin, keys } = await open();
    // UTF-16 puts the surrogate pair of U+1F600 before U+FF01; UTF-8, as Redis orders members, after it.
    const ids = [
      'tie-a',
      'tie-b',
      'tie-\u{1F600}',
      'tie-\uFF01',
      'tie-é',
      'tie-Z',
      'tie-0',
      'tie-a1',
    ];
    const order = '1700000000000000';
    for (const id of ids) {
      await store.create(run(id));
      await admin.hset(keys.run(id).run, 'order', order);
      await admin.zadd(keys.index(bucketOf(id), 'running'), order, id);
    }
    const expected = [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect((await store.list({ name: 'rewrite' })).map((r) => r.runId)).toEqual(expected);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.list({
          name: 'rewrite',
          limit,
          ...(after === undefined ? {} : { after }),
        });
        if (page.length === 0) break;
        seen.push(...page.map((r) => r.runId));
        after = page.at(-1)!.runId;
      }
      expect(seen, `pages of ${limit}`).toEqual(expected);
    }
  });
}

const reason = noRedisServer();
if (reason !== undefined) skippedBecause(reason);
else describeOnNodeAndCluster('rewrite', (open) => rewriteTests(open));
