import {
  defineAgent,
  definePlanner,
  toolArgsHash,
  waitUntilTool,
  type Agent,
  type JsonValue,
  type Model,
  type ModelResponse,
  type Planner,
  type Tool,
} from '@cairn/sdk';

/** What the approval definitions need from the simulated world (see `SimWorld.tool` and `SimWorld.model`). */
export interface WorldParts<Owner> {
  tool(
    owner: Owner,
    name: string,
    idempotent: boolean,
    result: (value: string) => object,
  ): Tool<{ value: string }, object>;
  model(
    owner: Owner,
    name: 'clerk' | 'itinerary',
    answer: (
      turn: number,
      rootRunId: string,
    ) => { text?: string; toolCalls?: ModelResponse['toolCalls'] },
  ): Model;
}

/** The definitions whose runs hold calls for a person's decision. */
export interface ApprovalDefinitions {
  /** An agent whose trips hold `refund` calls (rejected when undecided past `clerkTimeoutMs`) and sleep. */
  clerk: Agent<string>;
  /** A planner whose `pay` nodes wait for a decision (the run fails when undecided past `itineraryTimeoutMs`). */
  itinerary: Planner;
}

/** How long a clerk's held refund waits for a decision before it is answered as not approved. */
export const clerkTimeoutMs = 45_000;
/** How long an itinerary's held payment waits for a decision before the run fails with `APPROVAL_TIMEOUT`. */
export const itineraryTimeoutMs = 70_000;
/** How long the clerk's second trip sleeps (its `wait_until` call). */
const clerkSleepSeconds = 40;

/** A call a run of these definitions holds for approval: always the same, so the checks know its hash. */
export interface HoldableCall {
  callId: string;
  tool: string;
  args: { value: string };
}

/** The calls a run of `kind` holds for approval, in the order it holds them. */
export function holdableCalls(kind: string, rootRunId: string): HoldableCall[] {
  if (kind === 'clerk') {
    return [
      { callId: 'rf1', tool: 'refund', args: { value: `refund ${rootRunId}` } },
      { callId: 'rf2', tool: 'refund', args: { value: `credit ${rootRunId}` } },
    ];
  }
  if (kind === 'itinerary') {
    return [
      { callId: 'ticket', tool: 'pay', args: { value: `ticket ${rootRunId}` } },
      { callId: 'seat', tool: 'pay', args: { value: `seat ${rootRunId}` } },
    ];
  }
  return [];
}

/** The hash an approval of a holdable call must name. */
export function holdableHash(call: HoldableCall): string {
  return toolArgsHash(call.args as unknown as JsonValue);
}

/**
 * The clerk and the itinerary, bound to the process that performs them. The clerk's first trip holds `rf1`
 * while `q1` runs; its second holds `rf2` and sleeps; then it answers. The itinerary's plan holds `ticket` at
 * once and `seat` after `quote`; `done` needs both; a replan (after a rejection) only checks.
 */
export function approvalDefinitions<Owner>(
  world: WorldParts<Owner>,
  owner: Owner,
): ApprovalDefinitions {
  const refund = world.tool(owner, 'refund', false, (value) => ({ refunded: value }));
  const lookup = world.tool(owner, 'lookup', true, (value) => ({ found: value }));
  const pay = world.tool(owner, 'pay', false, (value) => ({ paid: value }));
  const call = (kind: string, root: string, index: number) => {
    const held = holdableCalls(kind, root)[index]!;
    return { id: held.callId, name: held.tool, args: held.args };
  };
  const clerk = defineAgent({
    name: 'clerk',
    model: world.model(owner, 'clerk', (turn, root) =>
      turn === 0
        ? {
            toolCalls: [call('clerk', root, 0), { id: 'q1', name: 'lookup', args: { value: 'b' } }],
          }
        : turn === 1
          ? {
              toolCalls: [
                call('clerk', root, 1),
                { id: 'z1', name: 'wait_until', args: { seconds: clerkSleepSeconds } },
              ],
            }
          : { text: 'refunded' },
    ),
    tools: [refund, lookup, waitUntilTool()],
    approval: { tools: { refund: true }, timeoutMs: clerkTimeoutMs, onTimeout: 'reject' },
    // Each message sent to a run may add a trip; the schedule sends a clerk at most `maxMessages`.
    maxTrips: 12,
  });
  const node = (index: number, root: string, dependsOn: string[]) => {
    const held = holdableCalls('itinerary', root)[index]!;
    return { id: held.callId, capability: held.tool, input: held.args, dependsOn };
  };
  const itinerary = definePlanner({
    name: 'itinerary',
    model: world.model(owner, 'itinerary', (turn, root) => ({
      text: JSON.stringify(
        turn === 0
          ? {
              nodes: [
                { id: 'quote', capability: 'lookup', input: { value: 'fare' }, dependsOn: [] },
                node(0, root, []),
                node(1, root, ['quote']),
                {
                  id: 'done',
                  capability: 'lookup',
                  input: { value: 'confirmed' },
                  dependsOn: ['ticket', 'seat'],
                },
              ],
            }
          : { nodes: [{ id: `check${turn}`, capability: 'lookup', input: { value: 'v' } }] },
      ),
    })),
    capabilities: [
      { name: 'pay', description: 'Pays.', executable: pay },
      { name: 'lookup', description: 'Looks up.', executable: lookup },
    ],
    approval: { capabilities: { pay: true }, timeoutMs: itineraryTimeoutMs, onTimeout: 'fail' },
    maxParallel: 3,
    maxReplans: 3,
  });
  return { clerk, itinerary };
}

/** The most user messages (steers, follow-ups) a schedule sends one run, so its trips stay under `maxTrips`. */
export const maxMessages = 5;
