import { hostname } from 'node:os';

/** A lease owner naming this process: host, pid and a random suffix, unique across restarts. */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
}
