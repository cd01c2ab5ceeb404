import { randomBytes } from 'node:crypto';
import { aesGcmCodec, deflateCodec, PayloadSealer, protectPayloads } from '@cairn/sdk';
import { redisKeyring } from '@cairn/store-redis';
import { createClient } from '@cairn/worker';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { useProcessBackends, type WorkerProcess } from './fixtures/process-backends.js';
import { relayAgent } from './fixtures/waiting-agents.js';

// Issue 34: forgetting a subject while 250 runs are in flight across three worker processes that share a key
// service (per-subject keys in Redis): that subject's runs stop and go, every copy of their payloads becomes
// unreadable, and the other subject's runs all complete, each tool call once.
const backends = useProcessBackends('cairn_forget');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());
const relay = relayAgent(() => undefined);

const linesFor = (workers: readonly WorkerProcess[], runIds: ReadonlySet<string>) =>
  workers.flatMap((w) => w.lines).filter((line) => runIds.has(String(line.runId)));

describe('forgetting a subject with 250 runs in flight on three worker processes', () => {
  it('stops and deletes its runs, leaves its payloads unreadable anywhere, and every other run completes', async () => {
    const backend = await backends.open('postgres');
    const key = randomBytes(32).toString('base64');
    const keyringPrefix = `cairn-test:keyring:${randomBytes(5).toString('hex')}`;
    const codec = [
      deflateCodec(),
      aesGcmCodec({
        keys: { k1: key },
        current: 'k1',
        subjects: redisKeyring({ client: redis, prefix: keyringPrefix }),
      }),
    ];
    const client = createClient({ store: protectPayloads(backend.store, { codec }) });
    const env = {
      PAYLOAD_KEY: key,
      KEYRING_PREFIX: keyringPrefix,
      REDIS_URL: redisUrl,
      RELAY_MS: '150',
      LEASE_MS: '5000',
      CONCURRENCY: '100',
    };
    const workers = await Promise.all(
      ['w1', 'w2', 'w3'].map((owner) => backends.worker(owner, env)),
    );
    const alice = new Set<string>();
    const bob = new Set<string>();
    for (let i = 0; i < 250; i += 1) {
      const subject = i % 2 === 0 ? 'alice' : 'bob';
      const { runId } = await client.start(relay, `relay ${subject}'s note ${i}`, { subject });
      (subject === 'alice' ? alice : bob).add(runId);
    }
    // Forgotten while her runs are in flight: some of them claimed, their tools running.
    const claimed = () => linesFor(workers, alice).filter((l) => l.type === 'claimed').length;
    for (let i = 0; i < 200 && claimed() < 20; i += 1) await new Promise((r) => setTimeout(r, 25));
    expect(claimed()).toBeGreaterThanOrEqual(20);
    const backup = await Promise.all([...alice].slice(0, 5).map((id) => backend.store.load(id)));

    const report = await client.forget({ subject: 'alice' }, { timeoutMs: 60_000 });
    expect(report.keysDeleted).toBe(true);
    expect(report.remaining).toEqual([]);
    expect(new Set(report.deleted)).toEqual(alice);

    // Nothing of hers is left, and what was copied before can no longer be read.
    const left = await backend.store.list();
    expect(left.filter((run) => alice.has(run.runId))).toEqual([]);
    const sealer = new PayloadSealer({ codec });
    for (const copy of backup.filter((stored) => stored?.run.snapshot != null)) {
      const { body, created } = copy!.run.snapshot as { body: string; created?: true };
      // What `create` wrote is bound to no incarnation (the store had not given one yet).
      const incarnation = created === true ? '' : copy!.run.incarnation;
      await expect(
        sealer.open(body, sealer.context(copy!.run.runId, incarnation, 'snapshot')),
      ).rejects.toMatchObject({ code: 'PAYLOAD_UNREADABLE', reason: 'key-missing' });
    }
    // Her live runs stopped themselves, saying why; none was taken over after a lease ran out.
    const hers = linesFor(workers, alice);
    const stopped = new Set(
      hers
        .filter((l) => l.type === 'skipped' && l.code === 'SUBJECT_FORGOTTEN')
        .map((l) => l.runId),
    );
    console.log(
      `forget: ${claimed()} claims of her runs, ${stopped.size} live runs stopped with ` +
        `SUBJECT_FORGOTTEN, ${report.deleted.length} runs deleted`,
    );
    expect(stopped.size).toBeGreaterThan(0);
    expect(hers.filter((l) => l.type === 'claimed' && l.takenFrom != null)).toEqual([]);

    // Every run of Bob's completes, each relay once.
    for (const runId of bob) {
      expect(await client.result(runId, { pollMs: 50, timeoutMs: 60_000 })).toBe(
        'relayed three times',
      );
    }
    const effects = workers
      .flatMap((w) => w.lines)
      .filter((l) => l.kind === 'effect' && bob.has(String(l.runId)));
    expect(effects).toHaveLength(bob.size * 3);
    expect(new Set(effects.map((l) => `${String(l.runId)}/${String(l.toolCallId)}`)).size).toBe(
      bob.size * 3,
    );
    expect(
      linesFor(workers, bob).filter((l) => l.type === 'failed' || l.type === 'skipped'),
    ).toEqual([]);
    const tag = `{${keyringPrefix}:keyring}`;
    await redis.del(`${tag}:ids`, `${tag}:keys`, `${tag}:forgotten`);
  });
});
