import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy to a store's server for fault tests: a test can cut it (every socket dropped, new ones
 * refused), restore it, or make it hold what one direction carries until released: a request or a reply
 * stuck in the network.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Buffers what flows `toServer` (requests) or `toClient` (replies) instead of forwarding it. */
  hold(direction: 'toServer' | 'toClient'): void;
  /** Forwards what was held and stops holding. */
  release(): void;
  close(): Promise<void>;
}

interface Pipe {
  from: Socket;
  to: Socket;
  direction: 'toServer' | 'toClient';
  held: Buffer[];
}

/** Starts a proxy on a free local port forwarding to `target`. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pipes = new Set<Pipe>();
  let holding: 'toServer' | 'toClient' | undefined;
  let server: Server;
  let port = 0;

  const forward = (pipe: Pipe) => {
    pipe.from.on('data', (chunk: Buffer) => {
      if (holding === pipe.direction) pipe.held.push(chunk);
      else pipe.to.write(chunk);
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connect(target);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        const up: Pipe = { from: client, to: upstream, direction: 'toServer', held: [] };
        const down: Pipe = { from: upstream, to: client, direction: 'toClient', held: [] };
        for (const pipe of [up, down]) {
          pipes.add(pipe);
          forward(pipe);
        }
        client.on('close', () => {
          upstream.destroy();
          pipes.delete(up);
          pipes.delete(down);
        });
        upstream.on('close', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        port = typeof address === 'object' && address !== null ? address.port : port;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      holding = undefined;
      for (const socket of sockets) socket.destroy();
      pipes.clear();
      server.close(() => resolve());
    });

  await listen();
  return {
    get port() {
      return port;
    },
    cut: stop,
    restore: listen,
    hold(direction) {
      holding = direction;
    },
    release() {
      holding = undefined;
      for (const pipe of pipes) {
        for (const chunk of pipe.held.splice(0)) pipe.to.write(chunk);
      }
    },
    close: stop,
  };
}
