import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cairn, json } from './support.js';

/** A server that takes connections and never says a word: a host behind a firewall that swallows packets. */
let silent: Server;
const sockets = new Set<Socket>();
let port = 0;
beforeAll(async () => {
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  port = (silent.address() as { port: number }).port;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

describe('a store that takes the connection and never answers', () => {
  it.each([
    ['Postgres', () => ({ DATABASE_URL: `postgres://ada:secret@127.0.0.1:${port}/test` })],
    ['Redis', () => ({ REDIS_URL: `redis://:secret@127.0.0.1:${port}` })],
  ])('fails the command with STORE_UNAVAILABLE instead of hanging (%s)', async (what, env) => {
    const answer = await cairn(['runs', 'list'], {
      ...env(),
      CAIRN_CONNECT_TIMEOUT_MS: '300',
    });
    expect(answer.code).toBe(1);
    expect(answer.stdout).toBe('');
    expect(answer.stderr).toBe(
      `error STORE_UNAVAILABLE: ${what} at 127.0.0.1:${port} did not answer within 300 ms.\n`,
    );
    const asJson = await cairn(['runs', 'list', '--json'], {
      ...env(),
      CAIRN_CONNECT_TIMEOUT_MS: '300',
    });
    expect(json(asJson.stderr)).toMatchObject({
      error: { code: 'STORE_UNAVAILABLE', data: { server: `127.0.0.1:${port}`, timeoutMs: 300 } },
    });
    expect(asJson.stderr).not.toContain('secret');
  });

  it('refuses a timeout that is not a number of milliseconds', async () => {
    const answer = await cairn(['runs', 'list'], {
      DATABASE_URL: `postgres://127.0.0.1:${port}/test`,
      CAIRN_CONNECT_TIMEOUT_MS: 'soon',
    });
    expect(answer.code).toBe(2);
    expect(answer.stderr).toMatch(/^error USAGE: CAIRN_CONNECT_TIMEOUT_MS must be/);
  });
});
