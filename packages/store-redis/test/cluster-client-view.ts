import type { Cluster } from 'ioredis';

/** The parts of an ioredis `Cluster` that say why its commands for a slot go unanswered (none are public). */
interface ClusterInternals {
  status: string;
  isRefreshing?: boolean;
  slots?: Array<string[] | undefined>;
  offlineQueue?: { length: number };
  delayQueue?: {
    queues?: Record<string, { length: number } | null>;
    timeouts?: Record<string, unknown>;
  };
  connectionPool?: { nodes?: { all?: Record<string, { status: string }> } };
}

/**
 * One line of what a `Cluster` client believes: its status, whether a slot-map refresh is under way, the commands
 * waiting in its offline and delay queues, who it thinks serves `slot`, and each node connection's status. For a
 * test whose commands went unanswered: a client that is stuck shows it here, a cluster that is stuck does not.
 */
export function clusterClientView(client: Cluster, slot: number): string {
  const internals = client as unknown as ClusterInternals;
  const delayed = Object.entries(internals.delayQueue?.queues ?? {})
    .filter(([, queue]) => (queue?.length ?? 0) > 0)
    .map(
      ([bucket, queue]) =>
        `${bucket}=${queue!.length}${internals.delayQueue?.timeouts?.[bucket] ? ' (timer set)' : ''}`,
    );
  const connections = Object.entries(internals.connectionPool?.nodes?.all ?? {}).map(
    ([key, redis]) => `${key.split(':')[1]}:${redis.status}`,
  );
  return [
    `status ${internals.status}`,
    `refreshing ${String(internals.isRefreshing)}`,
    `offline queue ${internals.offlineQueue?.length ?? '?'}`,
    `delayed ${delayed.join(' ') || 'none'}`,
    `slot ${slot} -> ${internals.slots?.[slot]?.join('|') ?? 'unmapped'}`,
    `connections ${connections.join(' ')}`,
  ].join('; ');
}
