import { createClient } from '@cairn/worker';
import type { StreamChunk } from '@cairn/sdk';
import type { BenchContext } from '../context.js';
import { dropSchema, freshSchema, migrateSchema, openStore } from '../pg-setup.js';
import type { Row } from '../report.js';
import { figure, now } from '../stats.js';
import { workerThroughput } from './throughput.js';

/** Tokens each model answer of the streamed runs says. */
const textTokens = 100;
/** Chunks in the stream a reader catches up on. */
const catchUpChunks = 10_000;

/**
 * Row 13: the cost of streaming. The throughput row's runs, each answer saying `textTokens` tokens streamed a
 * token at a time, with streaming off and on in turns (off, on, off, on...); then how long a reader takes to
 * read a 10,000-chunk stream from its first position.
 */
export async function streamingRow(ctx: BenchContext): Promise<Row> {
  const { reps, throughput } = ctx.config;
  ctx.log(
    `streaming: ${throughput.runs} runs of ${throughput.trips} trips, ${textTokens} tokens an answer, streaming off and on in turns x${reps}`,
  );
  const off: number[] = [];
  const on: number[] = [];
  const statements: number[] = [];
  const walPerThousand: number[] = [];
  for (let rep = 0; rep < reps; rep += 1) {
    const plain = await workerThroughput(ctx, throughput, { textTokens, stream: false });
    const streamed = await workerThroughput(ctx, throughput, { textTokens, stream: true });
    off.push(plain.tripsPerSecond);
    on.push(streamed.tripsPerSecond);
    // Every trip's answer, and the last one's, says textTokens tokens (the last adds one).
    const tokens = throughput.runs * (throughput.trips + 1) * textTokens;
    statements.push(((streamed.streamCalls ?? 0) * 1_000) / tokens);
    walPerThousand.push(((streamed.cost.walBytes - plain.cost.walBytes) * 1_000) / tokens);
  }
  const catchUp = await catchUpMs(ctx);
  return {
    key: 'streaming',
    title: `13. Streaming: the throughput row's runs with ${textTokens}-token answers, streamed and not`,
    metrics: [
      {
        key: 'streamed_over_plain',
        label: 'trips/s streaming on over trips/s off (bar: at least 0.85)',
        unit: 'x',
        figure: figure(on.map((value, i) => value / off[i]!)),
      },
      { key: 'trips_per_s_on', label: 'trips/s, streaming on', unit: '/s', figure: figure(on) },
      { key: 'trips_per_s_off', label: 'trips/s, streaming off', unit: '/s', figure: figure(off) },
      {
        key: 'stream_calls_per_1000_tokens',
        label: 'stream store calls (appends and position reads) per 1,000 tokens',
        unit: '',
        figure: figure(statements),
      },
      {
        key: 'wal_bytes_per_1000_tokens',
        label: 'WAL bytes per 1,000 tokens (on minus off)',
        unit: 'B',
        figure: figure(walPerThousand),
      },
      {
        key: 'catch_up_ms',
        label: `ms to read a ${catchUpChunks.toLocaleString('en-US')}-chunk stream from position 0`,
        unit: 'ms',
        figure: figure(catchUp),
      },
    ],
    notes: [
      `one worker, concurrency ${throughput.concurrency}; answers streamed a token (5 characters) at a time and coalesced as by default (40 ms or 400 characters); off and on alternate, so machine noise lands on both`,
      'the catch-up reads through client.stream, a run that ended, on the same Postgres',
    ],
  };
}

/** Appends a 10,000-chunk stream to a run, ends it, and times `client.stream` reading it all. */
async function catchUpMs(ctx: BenchContext): Promise<number[]> {
  const schema = freshSchema('bench_stream');
  await migrateSchema(ctx, schema);
  const opened = openStore(ctx, schema, 4);
  try {
    const { store } = opened;
    await store.create({
      runId: 'long',
      kind: 'agent',
      name: 'long',
      signature: 's',
      snapshot: null,
    });
    const lease = (await store.acquire('long', { owner: 'bench', ttlMs: 600_000 }))!;
    for (let from = 1; from <= catchUpChunks; from += 500) {
      const chunks: StreamChunk[] = Array.from({ length: 500 }, (_, i) => ({
        position: from + i,
        unit: 'trip-0/model',
        part: { type: 'text', text: 'word '.repeat(20) },
        at: Date.now(),
      }));
      await store.appendStream!(lease, chunks);
    }
    await store.save(lease, {
      status: 'completed',
      signature: 's',
      snapshot: null,
      journalSeq: 0,
      output: 'done',
      release: true,
    });
    const client = createClient({ store });
    const times: number[] = [];
    for (let rep = 0; rep < ctx.config.reps; rep += 1) {
      const started = now();
      let read = 0;
      for await (const _ of client.stream('long')) read += 1;
      times.push(now() - started);
      if (read !== catchUpChunks) throw new Error(`read ${read} chunks of ${catchUpChunks}`);
    }
    return times;
  } finally {
    await opened.close();
    await dropSchema(ctx, schema);
  }
}
