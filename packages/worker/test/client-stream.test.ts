import {
  CairnError,
  defineAgent,
  foldStream,
  memoryStore,
  RunNotFoundError,
  waitUntilTool,
  type DurableStore,
  type StreamChunk,
} from '@cairn/sdk';
import { scriptedModel } from '@cairn/testing';
import { createClient, createWorker, type CairnClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { gate } from './support.js';

const answer =
  'Cairn streams what a run says while it runs, and a reader can pick it up anywhere. '.repeat(4);

async function collect(client: CairnClient, runId: string, after?: number, stopAt?: number) {
  const chunks: StreamChunk[] = [];
  for await (const chunk of client.stream(runId, {
    pollMs: 5,
    ...(after === undefined ? {} : { after }),
  })) {
    chunks.push(chunk);
    if (chunk.position === stopAt) break;
  }
  return chunks;
}

/**
 * A streaming agent whose model says a piece each event-loop turn (as one reading a socket does) and holds
 * before piece `holdAt` until `open()`.
 */
function heldAgent(store: DurableStore, holdAt: number) {
  const held = gate();
  const model = scriptedModel([{ text: answer }], {
    streamPieces: 6,
    onPiece: async ({ index }) => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (index === holdAt) await held.opened;
    },
  });
  const agent = defineAgent({
    name: 'talker',
    model,
    durable: { store, stream: { coalesceChars: 12 } },
  });
  return { agent, open: held.open };
}

describe('client.stream', () => {
  it('reads a run live from the first chunk to its end, and again from any position, exactly the rest', async () => {
    const store = memoryStore();
    const { agent, open } = heldAgent(store, 20);
    const client = createClient({ store });
    const worker = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    await worker.start();
    try {
      const { runId } = await client.start(agent, 'talk');
      // A reader that starts while the run is mid-stream, drops at position 3, and comes back from there.
      const first = await collect(client, runId, 0, 3);
      expect(first.map((c) => c.position)).toEqual([1, 2, 3]);
      const resumed = collect(client, runId, 3);
      open();
      const rest = await resumed;
      const all = [...first, ...rest];
      expect(all.map((c) => c.position)).toEqual(all.map((_, i) => i + 1));
      expect(foldStream(all).text).toBe(answer);
      expect(await client.result(runId)).toBe(answer);
      // Once the run ended, every position reads exactly what follows it, and the iterator ends.
      for (const after of [0, 1, 5, all.length - 1, all.length]) {
        expect(await collect(client, runId, after)).toEqual(all.slice(after));
      }
    } finally {
      await worker.close();
    }
  });

  it('throws RunNotFoundError for an unknown run, INVALID_ARGUMENT for a bad position or a store without streams', async () => {
    const store = memoryStore();
    const client = createClient({ store });
    await expect(collect(client, 'no-such-run')).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(collect(client, 'no-such-run', -1)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const { appendStream: _a, readStream: _r, streamPosition: _p, ...withoutStreams } = store;
    const plain = createClient({ store: withoutStreams });
    const error = await collect(plain, 'r').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(CairnError);
    expect((error as CairnError).code).toBe('INVALID_ARGUMENT');
  });

  it('refuses a worker that would stream on a store that keeps no stream log', () => {
    const {
      appendStream: _a,
      readStream: _r,
      streamPosition: _p,
      ...withoutStreams
    } = memoryStore();
    const model = scriptedModel([{ text: answer }]);
    const quiet = defineAgent({ name: 'quiet', model });
    const talker = defineAgent({
      name: 'talker',
      model,
      durable: { store: withoutStreams, stream: true },
    });
    for (const options of [
      { agents: [quiet], stream: true },
      { agents: [quiet, talker] }, // a definition that streams, and the worker says nothing
    ]) {
      expect(() => createWorker({ store: withoutStreams, ...options })).toThrow(
        expect.objectContaining({
          code: 'INVALID_ARGUMENT',
          message: expect.stringMatching(/keeps no stream log/),
        }),
      );
    }
    // The worker's word wins over the definition's: this one streams nothing, and is fine.
    expect(() =>
      createWorker({ store: withoutStreams, agents: [quiet, talker], stream: false }),
    ).not.toThrow();
  });

  it('goes on reading a waiting run that a steer woke, until what it says after the wait is read', async () => {
    const store = memoryStore();
    const after = 'Here is the answer after your message.';
    const model = scriptedModel(
      [
        {
          text: 'I will check back.',
          toolCalls: [{ id: 'w', name: 'wait_until', args: { seconds: 3600 } }],
        },
        { text: after },
      ],
      { streamPieces: 5 },
    );
    const agent = defineAgent({
      name: 'sleepy',
      model,
      tools: [waitUntilTool()],
      durable: { store, stream: true },
    });
    const client = createClient({ store });
    const first = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    await first.start();
    const { runId } = await client.start(agent, 'go');
    while ((await store.load(runId))?.run.status !== 'waiting')
      await new Promise((r) => setTimeout(r, 5));
    await first.close();
    const before = await store.streamPosition!(runId);
    await client.steer(runId, 'now please');
    // The reader starts while the run, woken, is still stored waiting: no worker has claimed it yet.
    const later = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    const starting = new Promise((resolve) => setTimeout(resolve, 50)).then(() => later.start());
    const seen = await collect(client, runId, before);
    await starting;
    await later.close();
    expect(foldStream(seen).text).toBe(after);
  });

  it('ends without an error when the run is deleted once it completed', async () => {
    const store = memoryStore();
    const model = scriptedModel([{ text: answer }], { streamPieces: 7 });
    const agent = defineAgent({
      name: 'gone',
      model,
      durable: { store, stream: true, deleteOnComplete: true },
    });
    const client = createClient({ store });
    const worker = createWorker({ store, agents: [agent], shutdownSignals: [], pollMs: 10 });
    await worker.start();
    try {
      const { runId } = await client.start(agent, 'go');
      await expect(collect(client, runId)).resolves.toBeInstanceOf(Array);
    } finally {
      await worker.close();
    }
  });
});
