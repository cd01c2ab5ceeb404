import { request } from 'node:http';
import type { StreamChunk } from '@cairn/sdk';
import { createClient } from '@cairn/worker';
import { describe, expect, it } from 'vitest';
import { serveUi } from '../src/ui/serve-ui.js';
import { getFrom, parseSse, runPath } from './fixtures/http-get.js';
import { describeUiOnStores } from './fixtures/ui-server.js';

await describeUiOnStores('cairn_cli_ui_stream', (fixture) => {
  describe('the text stream', () => {
    const get = (path: string, headers?: Record<string, string>) =>
      getFrom(fixture().ui.url, path, headers);
    const stored = async (runId: string) =>
      await fixture().store.readStream!(runId, { limit: 10_000 });

    it('sends what the run said in order, each chunk with its position as id, then ends', async () => {
      const runId = fixture().ids.completed;
      const chunks = await stored(runId);
      // The seeded run streamed: its tool calls, then its answer in pieces.
      expect(chunks.length).toBeGreaterThan(4);
      const answer = await get(`${runPath(runId)}/stream`);
      expect([answer.status, answer.type]).toEqual([200, 'text/event-stream; charset=utf-8']);
      const messages = parseSse(answer.body);
      expect(messages.at(-1)).toEqual({ event: 'end', data: '{}' });
      const sent = messages.filter((message) => message.event === 'message');
      expect(sent.map((message) => Number(message.id))).toEqual(
        chunks.map((chunk) => chunk.position),
      );
      expect(sent.map((message) => JSON.parse(message.data) as StreamChunk)).toEqual(chunks);
      const said = chunks.flatMap(({ part }) => (part.type === 'text' ? [part.text] : []));
      expect(said.join('')).toBe('Booked CA985 and emailed Ada.');
    });

    it('resumes after Last-Event-ID with exactly the rest, over the URL’s after', async () => {
      const runId = fixture().ids.completed;
      const positions = (await stored(runId)).map((chunk) => chunk.position);
      const rest = async (path: string, headers?: Record<string, string>) =>
        parseSse((await get(path, headers)).body)
          .filter((message) => message.event === 'message')
          .map((message) => Number(message.id));
      expect(
        await rest(`${runPath(runId)}/stream?after=0`, { 'Last-Event-ID': String(positions[2]) }),
      ).toEqual(positions.slice(3));
      expect(await rest(`${runPath(runId)}/stream?after=${positions[4]}`)).toEqual(
        positions.slice(5),
      );
      expect(await rest(`${runPath(runId)}/stream?after=${positions.at(-1)}`)).toEqual([]);
    });

    it('answers 404 for an unknown run and 400 for a bad position, as JSON before any stream', async () => {
      const unknown = await get(`${runPath('no-such-run')}/stream`);
      expect([unknown.status, unknown.type]).toEqual([404, 'application/json; charset=utf-8']);
      expect(JSON.parse(unknown.body).error.code).toBe('RUN_NOT_FOUND');
      const bad = await get(`${runPath(fixture().ids.completed)}/stream`, {
        'Last-Event-ID': 'x',
      });
      expect([bad.status, JSON.parse(bad.body).error.code]).toEqual([400, 'INVALID_ARGUMENT']);
    });

    it('says once that a store keeps no streams, so the page stops asking', async () => {
      const { readStream: _readStream, ...store } = fixture().store;
      const ui = await serveUi({ client: createClient({ store }), pollMs: 50 });
      try {
        const answer = await getFrom(ui.url, `${runPath(fixture().ids.completed)}/stream`);
        const messages = parseSse(answer.body);
        expect(messages.map((message) => message.event)).toEqual(['none']);
        expect(JSON.parse(messages[0]!.data).code).toBe('INVALID_ARGUMENT');
      } finally {
        await ui.close();
      }
    });

    it('ends when the server closes while a browser still reads a run that goes on', async () => {
      const ui = await serveUi({ client: fixture().client, pollMs: 50 });
      // A queued run's stream never ends by itself; the server closes once the stream has started.
      const body = await new Promise<string>((resolve, reject) => {
        request(new URL(`${runPath(fixture().ids.queued)}/stream`, ui.url), (response) => {
          let text = '';
          let closing: Promise<void> | undefined;
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
            closing ??= ui.close();
          });
          response.on('end', () => {
            (closing ?? Promise.reject(new Error('the stream ended by itself'))).then(
              () => resolve(text),
              reject,
            );
          });
        })
          .on('error', reject)
          .end();
      });
      expect(body).toBe('retry: 1000\n\n');
    });
  });
});
