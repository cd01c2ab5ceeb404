/**
 * The JSON the page reads from its API. These types import nothing: the page is type-checked for a browser (DOM,
 * no Node), and `@cairn/sdk`'s source, which a type import from it would bring into that check, needs Node. So
 * the shapes are written out here, and `../api-types.test.ts` (type-checked with the server's code) proves that
 * what the server sends is them: `RunEvent` and `StreamChunk` exactly as the sdk defines them, the run views as
 * a part of what the server's views hold.
 */

/** A run's status, as the sdk's `RunStatus`. */
export type RunStatus =
  | 'queued'
  | 'running'
  | 'waiting'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'suspended'
  | 'dead_lettered';

/** The sdk's `EffectOutcomeStatus`. */
export type EffectOutcomeStatus = 'ok' | 'error' | 'unknown';

/** The sdk's `HistoryUsage`. */
export interface HistoryUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The sdk's `AbandonedHow`. */
export type AbandonedHow = 'taken_over' | 'handed_over' | 'suspended';

interface EventBase {
  seq: number;
  at: number;
}

/** One event of a run's history, as the sdk's `RunEvent` (its doc comments say what each field means). */
export type RunEvent =
  | (EventBase & {
      type: 'attempt.started';
      epoch: number;
      owner: string;
      takenFrom: string | null;
    })
  | (EventBase & {
      type: 'attempt.abandoned';
      epoch: number;
      owner: string;
      lastSeq: number;
      how: AbandonedHow;
    })
  | (EventBase & {
      type: 'unit.started' | 'unit.settled';
      unit: string;
      label: string;
      startedAt?: number;
      ms?: number;
      usage?: HistoryUsage;
    })
  | (EventBase & {
      type: 'effect.started' | 'effect.settled';
      effectId: string;
      unit: string | null;
      name: string;
      kind: string;
      outcome?: EffectOutcomeStatus;
      code?: string;
      ms?: number;
      bytes?: number;
      usage?: HistoryUsage;
      childRunId?: string;
    })
  | (EventBase & { type: 'signals'; names: string[] })
  | (EventBase & { type: 'waiting'; until: number | null; signals: string[] })
  | (EventBase & { type: 'ended'; status: RunStatus; code?: string })
  | (EventBase & { type: 'history.truncated' });

/** A JSON value, as the sdk's `JsonValue`. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** How a tool call the run made settled, as the sdk's `ToolOutcomePart`. */
export interface ToolOutcomePart {
  type: 'tool-outcome';
  toolCallId: string;
  outcome: 'ok' | 'error' | 'unknown';
  output?: JsonValue;
  truncated?: true;
  errorText?: string;
}

/** A piece of what a run says as its model streams it, as the sdk's `StreamPart`. */
export type StreamPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input'; toolCallId: string; delta: string }
  | ToolOutcomePart
  | { type: 'superseded' }
  | { type: 'sealed'; data: string };

/** A chunk of a run's stream log, as the sdk's `StreamChunk`: `position` is its SSE id. */
export interface StreamChunk {
  position: number;
  unit: string;
  part: StreamPart;
  at: number;
}

/** A run as the list shows it (the server's `RunSummary`). */
export interface RunSummary {
  runId: string;
  kind: string;
  name: string;
  status: RunStatus;
  epoch: number;
  recoveries: number;
  parent: { runId: string } | null;
  updatedAt: number;
  /** Its payloads are encrypted and the server has no codec: each shows as "(encrypted)". */
  encrypted: boolean;
  /** Why its stored rows cannot be read (changed, or payloads the server's codec cannot decode). */
  unreadable?: string;
}

/** One node of a planner's plan (the sdk's `PlanNodeView`). */
export interface PlanNodeView {
  id: string;
  capability: string;
  dependsOn: string[];
  layer: number;
  state: string;
  childRunId?: string;
  code?: string;
}

/** A planner run's plan (the sdk's `PlanView`). */
export interface PlanView {
  phase: string;
  revision: number | null;
  replans: number;
  usage: HistoryUsage;
  nodes: PlanNodeView[];
}

/** A child run as its parent's page links it (the server's `ChildRunView`). */
export interface ChildRunView {
  runId: string;
  kind: string;
  name: string;
  status: RunStatus;
  node: string;
}

/** What a waiting run waits for (the worker's `WaitingFor`). */
export interface WaitingFor {
  until: number | null;
  signals: string[];
  approvals: { callId: string; tool: string }[];
}

/** A run as its page shows it (the server's `RunDetail`). */
export interface RunDetail extends RunSummary {
  owner: string | null;
  held: boolean;
  /** The store knows the holder's process died (its lease may still run). */
  holderGone?: boolean;
  cancelRequested: boolean;
  createdAt: number;
  output?: unknown;
  error?: { code: string; message: string };
  waitingFor: WaitingFor | null;
  plan: PlanView | null;
  children: ChildRunView[];
}

/** `GET /api/runs`. */
export interface RunListAnswer {
  runs: RunSummary[];
  /** The most runs the answer holds: as many as that, and there may be more. */
  limit: number;
}

/** `GET /api/runs/:id`. */
export interface RunAnswer {
  run: RunDetail;
}

/** `GET /api/runs/:id/events`. */
export interface EventsAnswer {
  events: RunEvent[];
}

/** The body of an API error, and the data of an SSE `gone` event. */
export interface ApiError {
  code: string;
  message: string;
}

/** The body of an error answer. */
export interface ErrorAnswer {
  error: ApiError;
}
