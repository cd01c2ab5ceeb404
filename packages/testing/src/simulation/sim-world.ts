import {
  CairnError,
  defineAgent,
  definePlanner,
  defineTool,
  reservedRunIdPrefix,
  type Agent,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type Planner,
  type Tool,
  type Usage,
} from '@cairn/sdk';
import { z } from 'zod';
import { approvalDefinitions, type ApprovalDefinitions } from './approval-world.js';
import type { Random } from './random.js';
import type { Scheduler } from './scheduler.js';

/** What a definition's effects need from the process that performs them. */
export interface EffectOwner {
  readonly name: string;
  /** True once the process died: what it starts from then on never reaches the world. */
  readonly dead: boolean;
}

/** The agent and planner kinds the schedules run: `clerk` and `itinerary` hold calls for approval. */
export type SimKind = 'booker' | 'trip' | 'clerk' | 'itinerary';

/** The simulated models, by the definition they answer for. */
export type SimModel = 'booker' | 'trip' | 'concierge' | 'clerk' | 'itinerary';

/** The calls of the simulated world that are not idempotent: each may happen at most once. */
export const nonIdempotentCalls: ReadonlySet<string> = new Set([
  'p1',
  'p2',
  'p3',
  'charge',
  'deposit',
  'h1',
  'h2',
  // Held for approval (see approval-world.ts).
  'rf1',
  'rf2',
  'ticket',
  'seat',
]);

/** Usage of each model answer, by definition and turn: what a run must count once per turn. */
export function usageOf(model: SimModel, turn: number): Usage {
  const base = { booker: 10, trip: 50, concierge: 7, clerk: 3, itinerary: 20 }[model];
  const inputTokens = base * (turn + 1);
  const outputTokens = turn + 1;
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

/** The root run id a run belongs to: a child's id (`childRunId`) holds its root's, up to the last `/`. */
export function rootIdOf(runId: string): string {
  return runId.startsWith(reservedRunIdPrefix)
    ? runId.slice(reservedRunIdPrefix.length, runId.lastIndexOf('/'))
    : runId;
}

const firstUser = (request: ModelRequest) => {
  const first = request.messages.find((message) => message.role === 'user');
  return first?.role === 'user' ? first.content : '';
};
const turnOf = (request: ModelRequest) =>
  request.messages.filter((message) => message.role === 'assistant').length;

/**
 * The outside world of a schedule: tools and models whose every call waits for the scheduler to let it
 * happen, and a side table of what happened (each tool's side effects, each model call), kept outside the
 * stores so the checks never trust what a store says. Runs are named `r1`, `r2`... with inputs that carry
 * their ids, so a model call can tell whose it is; a run id created again after a discard starts a new
 * generation, and what happens to it is counted apart.
 */
export class SimWorld {
  /** Side effects per `${runId}@${generation}/${call}`. */
  readonly sideEffects = new Map<string, number>();
  /** The `value` argument of every tool call that happened, per `${runId}@${generation}/${call}`. */
  readonly executions = new Map<string, string[]>();
  /** Model calls that returned, per `${runId}@${generation}/turn-${turn}`. */
  readonly modelCalls = new Map<string, number>();
  /** Tool results the schedule poisons (a lone surrogate, NUL), per `${runId}/${call}`. */
  private readonly poison = new Map<string, string>();
  private readonly generations = new Map<string, number>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly random: Random,
  ) {}

  generation(rootRunId: string): number {
    return this.generations.get(rootRunId) ?? 0;
  }

  /** A root run id created again after a discard: what happens to it from now on is counted apart. */
  nextGeneration(rootRunId: string): void {
    this.generations.set(rootRunId, this.generation(rootRunId) + 1);
  }

  /** The key side tables use for a run's call. */
  keyOf(runId: string, call: string): string {
    return `${runId}@${this.generation(rootIdOf(runId))}/${call}`;
  }

  /** Decides, from the seed, which results of a run come back unstorable. */
  choosePoison(runId: string): void {
    for (const call of nonIdempotentCalls) {
      if (this.random.chance(0.2)) {
        this.poison.set(`${runId}/${call}`, this.random.chance(0.5) ? '\u0000' : '😀'.slice(0, 1));
      }
    }
  }

  /** The input a root run is started with. */
  inputOf(kind: SimKind, runId: string): string {
    return {
      booker: 'order for',
      trip: 'a trip for',
      clerk: 'a refund for',
      itinerary: 'a route for',
    }[kind].concat(` ${runId}`);
  }

  /** The definitions, bound to the process that performs them (their calls are that process's). */
  definitions(owner: EffectOwner): {
    booker: Agent<string>;
    trip: Planner;
    concierge: Agent<string>;
  } & ApprovalDefinitions {
    const pay = this.tool(owner, 'pay', false, (value) => ({ paid: value }));
    const lookup = this.tool(owner, 'lookup', true, (value) => ({ found: value }));
    const book = this.tool(owner, 'book_hotel', false, (value) => ({ booked: value }));
    const booker = defineAgent({
      name: 'booker',
      model: this.model(owner, 'booker', (turn) =>
        turn === 0
          ? {
              toolCalls: [
                { id: 'p1', name: 'pay', args: { value: 'deposit' } },
                { id: 'p3', name: 'pay', args: { value: 'fee' } },
                { id: 'l1', name: 'lookup', args: { value: 'fare' } },
              ],
            }
          : turn === 1
            ? { toolCalls: [{ id: 'p2', name: 'pay', args: { value: 'balance' } }] }
            : { text: 'booked' },
      ),
      tools: [pay, lookup],
      maxTrips: 5,
    });
    const concierge = defineAgent({
      name: 'concierge',
      model: this.model(owner, 'concierge', (turn) =>
        turn === 0
          ? {
              toolCalls: [
                { id: 'h1', name: 'book_hotel', args: { value: 'Lisbon' } },
                { id: 'h2', name: 'book_hotel', args: { value: 'Porto' } },
              ],
            }
          : { text: 'hotel booked' },
      ),
      tools: [book],
      maxTrips: 4,
    });
    const trip = definePlanner({
      name: 'trip',
      model: this.model(owner, 'trip', (turn, runId) => ({
        text: JSON.stringify(
          turn === 0
            ? {
                nodes: [
                  {
                    id: 'hotel',
                    capability: 'concierge',
                    input: `book a hotel for ${runId}`,
                    dependsOn: [],
                  },
                  { id: 'charge', capability: 'pay', input: { value: 'trip' }, dependsOn: [] },
                  { id: 'deposit', capability: 'pay', input: { value: 'deposit' }, dependsOn: [] },
                  {
                    id: 'notify',
                    capability: 'lookup',
                    input: { value: 'notified' },
                    dependsOn: ['hotel', 'charge', 'deposit'],
                  },
                ],
              }
            : // A replan after a node was reported unknown: finish with a check of what happened.
              { nodes: [{ id: `verify${turn}`, capability: 'lookup', input: { value: 'v' } }] },
        ),
      })),
      capabilities: [
        { name: 'concierge', description: 'Books a hotel.', executable: concierge },
        { name: 'pay', description: 'Pays.', executable: pay },
        { name: 'lookup', description: 'Looks up.', executable: lookup },
      ],
      maxParallel: 3,
      maxReplans: 3,
    });
    return { booker, trip, concierge, ...approvalDefinitions(this, owner) };
  }

  /**
   * A tool of `{ value }` whose every call waits for the scheduler, then counts its side effect (and the value
   * it ran with) for the generation the call started in.
   */
  tool(
    owner: EffectOwner,
    name: string,
    idempotent: boolean,
    result: (value: string) => object,
  ): Tool<{ value: string }, object> {
    return defineTool({
      name,
      description: `The simulated ${name} tool.`,
      input: z.object({ value: z.string() }),
      idempotent,
      // The schedule moves the clock by whole lease periods while a tool is held, so the 60 s default would
      // abandon tools the invariants expect to settle; tool timeouts have tests of their own
      // (sdk/test/tool-timeout.test.ts) and are not a simulated fault yet.
      timeoutMs: 2 ** 31 - 1,
      execute: async ({ value }, ctx) => {
        // Counted for the generation the call started in, whenever it happens.
        const key = this.keyOf(ctx.runId, ctx.toolCallId);
        await this.happen(owner, `tool ${name} ${ctx.runId}/${ctx.toolCallId}`, ctx.signal);
        this.sideEffects.set(key, (this.sideEffects.get(key) ?? 0) + 1);
        this.executions.set(key, [...(this.executions.get(key) ?? []), value]);
        const poisoned = this.poison.get(`${ctx.runId}/${ctx.toolCallId}`) ?? '';
        return result(`${value}${poisoned}`);
      },
    });
  }

  /** A model that answers by turn, each call waiting for the scheduler; the run id is read from its input. */
  model(
    owner: EffectOwner,
    name: SimModel,
    answer: (
      turn: number,
      rootRunId: string,
    ) => { text?: string; toolCalls?: ModelResponse['toolCalls'] },
  ): Model {
    return {
      name: `sim-${name}`,
      provider: 'cairn-simulation',
      generate: async (request) => {
        const turn = turnOf(request);
        // Every input names its root run; the concierge is always its root's `hotel` node.
        const root = /\br\d+\b/.exec(firstUser(request))?.[0] ?? '?';
        const id = name === 'concierge' ? `${root}/hotel` : root;
        const key = this.keyOf(id, `turn-${turn}`);
        await this.happen(owner, `model ${name} ${id} turn ${turn}`, request.signal);
        this.modelCalls.set(key, (this.modelCalls.get(key) ?? 0) + 1);
        const scripted = answer(turn, root);
        if (scripted.text === undefined && scripted.toolCalls === undefined) {
          throw new CairnError('MODEL_FAILED', 'The simulated model has no answer.');
        }
        return {
          message: { role: 'assistant', content: scripted.text ?? '' },
          toolCalls: scripted.toolCalls ?? [],
          usage: usageOf(name, turn),
        };
      },
    };
  }

  /**
   * Waits until the scheduler lets this call happen. A call whose run stops first (its signal aborts) never
   * happens, as a well-behaved tool stops before its side effect.
   */
  private happen(
    owner: EffectOwner,
    label: string,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { id, released } = this.scheduler.hold('effect', owner.name, label);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.scheduler.drop(id);
        reject(signal?.reason);
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      void released.then(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }
}
