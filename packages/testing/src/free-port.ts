import { createServer } from 'node:net';

// Ports come from below the ephemeral range (Linux hands out 32 768–60 999 for outgoing connections and for
// `listen(0)`, macOS 49 152–65 535). A port taken from that range is free when asked, but once its server stops
// (a test that kills and restarts a server on the same port), any outgoing connection of any process may be given
// it as its local port, and the restart cannot bind. Below the range, only another test's server can hold it.
const lowest = 20_000;
const span = 12_000;
// Test files run side by side in worker processes numbered by `VITEST_POOL_ID`: each draws from its own block,
// so two files do not both find the same port free and both bind it a moment later.
const blocks = 12;
const blockSize = span / blocks;

function poolBlock(): number | undefined {
  const id = Number(process.env.VITEST_POOL_ID);
  return Number.isInteger(id) && id > 0 ? (id - 1) % blocks : undefined;
}

/** Whether nothing listens on `port` of 127.0.0.1 right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const handedOut = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, for a server a test starts: below the ephemeral
 * range, so the server can be stopped and started again on it, and never the same port twice in a process.
 */
export async function freePort(): Promise<number> {
  const block = poolBlock();
  const [from, size] =
    block === undefined ? [lowest, span] : [lowest + block * blockSize, blockSize];
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = from + Math.floor(Math.random() * size);
    if (handedOut.has(port)) continue;
    if (await isFree(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${from}–${from + size - 1}`);
}
