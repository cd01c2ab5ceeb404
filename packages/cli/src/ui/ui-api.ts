import { CairnError, isCairnError, type RunFilter, type RunStatus } from '@cairn/sdk';
import type { CairnClient } from '@cairn/worker';
import { runDetail, runSummary } from './run-views.js';

/** A JSON answer of the page's API. */
export interface ApiResponse {
  status: number;
  body: unknown;
}

const statuses: readonly RunStatus[] = [
  'queued',
  'running',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'suspended',
  'dead_lettered',
];

/**
 * Runs the list asks for when it names no `limit`. The store lists oldest first, and each row is read with its
 * checkpoint: a bound keeps one page load from reading a whole store.
 */
export const defaultListLimit = 1000;
const maxListLimit = 10_000;

function invalid(message: string, data: Record<string, string>): CairnError {
  return new CairnError('INVALID_ARGUMENT', message, { data });
}

/**
 * `GET /api/runs?status=a,b&name=&kind=&limit=`: the runs matching the filter, oldest first and at most `limit`
 * of them, without their checkpoints.
 */
export async function listRuns(client: CairnClient, query: URLSearchParams): Promise<ApiResponse> {
  const filter: RunFilter = { limit: defaultListLimit };
  const status = query.get('status');
  if (status !== null && status !== '') {
    const wanted = status.split(',');
    for (const name of wanted) {
      if (!statuses.includes(name as RunStatus)) {
        throw invalid(`Unknown status "${name}": one of ${statuses.join(', ')}.`, { status });
      }
    }
    filter.status = wanted as RunStatus[];
  }
  const kind = query.get('kind');
  if (kind !== null && kind !== '') filter.kind = kind;
  const name = query.get('name');
  if (name !== null && name !== '') filter.name = name;
  const limit = query.get('limit');
  if (limit !== null && limit !== '') {
    const value = Number(limit);
    if (!/^\d+$/.test(limit) || value < 1 || value > maxListLimit) {
      throw invalid(`\`limit\` must be a whole number from 1 to ${maxListLimit}.`, { limit });
    }
    filter.limit = value;
  }
  const runs = await client.list(filter);
  // `limit` tells the page when it may not have every run (the store lists oldest first).
  return { status: 200, body: { runs: runs.map(runSummary), limit: filter.limit } };
}

/** `GET /api/runs/:id`: the run, its plan when it is a planner, and its child runs. */
export async function showRun(client: CairnClient, runId: string): Promise<ApiResponse> {
  const info = await client.get(runId);
  if (info === undefined) return notFound(runId);
  return { status: 200, body: { run: await runDetail(client, info) } };
}

/** `GET /api/runs/:id/events?after=n`: the run's history after `seq` n. */
export async function listEvents(
  client: CairnClient,
  runId: string,
  query: URLSearchParams,
): Promise<ApiResponse> {
  const events = await client.events(runId, { after: parseAfter(query.get('after')) });
  return { status: 200, body: { events } };
}

/** A `seq` cursor from a query or a `Last-Event-ID` header: absent is 0, anything but a whole number is 400. */
export function parseAfter(value: string | null | undefined): number {
  if (value === null || value === undefined || value === '') return 0;
  const after = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(after)) {
    throw invalid('`after` must be a whole number of at least 0.', { after: value });
  }
  return after;
}

/** The 404 of a run id the store does not have. */
export function notFound(runId: string): ApiResponse {
  return {
    status: 404,
    body: { error: { code: 'RUN_NOT_FOUND', message: `No run with id "${runId}" exists.` } },
  };
}

/**
 * The answer to a failed request: a bad argument is 400, an unknown run 404, a store that is down 503 (the
 * page tries again), anything else 500. The body names the error's stable code.
 */
export function errorResponse(error: unknown): ApiResponse {
  if (!isCairnError(error)) {
    return { status: 500, body: { error: { code: 'INTERNAL', message: String(error) } } };
  }
  const status =
    error.code === 'INVALID_ARGUMENT'
      ? 400
      : error.code === 'RUN_NOT_FOUND'
        ? 404
        : error.retryable
          ? 503
          : 500;
  return { status, body: { error: { code: error.code, message: error.message } } };
}
