import { z } from 'zod';
import { heldCallSchema, type HeldCall } from '../approvals.js';
import type { ModelMessage, Usage } from '../model.js';
import type { SettledEffect } from '../runtime/step-function.js';

/** A trip whose tool calls are not all answered yet because some wait: for a decision, or for a time. */
export interface HeldTrip {
  /** Outcomes of this trip's calls that ran, kept until every call has its answer. */
  settled: SettledEffect[];
  approvals: HeldCall[];
  /** The model asked to wait (a wait tool): its calls, and when the run wakes. */
  sleep?: { callIds: string[]; until: number; interruptedAt?: number };
}

/** A user message sent to the run while it worked, kept until the next trip boundary. */
export interface InboxMessage {
  kind: 'followUp' | 'steer';
  content: string;
}

/** An agent run's state: everything its checkpoint holds. Pure JSON. */
export interface AgentState {
  /** The user's input that started the run. */
  input: string;
  /** The conversation so far, without the system prompt (it is not part of the signature). */
  messages: ModelMessage[];
  /** Model calls settled so far. */
  trips: number;
  /** Usage of every settled model call, each counted once. */
  usage: Usage;
  /** The current trip, while some of its tool calls wait. */
  held?: HeldTrip;
  /** Messages sent to the run that join the conversation before the next model call. */
  inbox?: InboxMessage[];
  /**
   * Decisions that arrived before the call they name was held (sent from outside the client, which only
   * decides calls a run waits on): applied when the call is held, if its arguments match.
   */
  earlyDecisions?: EarlyDecision[];
}

/** A decision on a call that was not held yet when it arrived. */
export interface EarlyDecision {
  callId: string;
  approved: boolean;
  argsHash?: string;
  by?: string;
  reason?: string;
}

const jsonValue = z.json();
const count = z.number().int().nonnegative();
const toolCall = z.object({ id: z.string(), name: z.string(), args: jsonValue });

const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string(),
    toolCalls: z.array(toolCall).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    toolName: z.string(),
    content: jsonValue,
    isError: z.boolean().optional(),
    outcome: z.enum(['ok', 'error', 'unknown']).optional(),
  }),
]);

const settledEffect = z.object({
  id: z.string(),
  outcome: z.discriminatedUnion('status', [
    z.object({ status: z.literal('ok'), value: jsonValue }),
    z.object({ status: z.literal('error'), error: jsonValue }),
    z.object({ status: z.literal('unknown'), error: jsonValue.optional() }),
  ]),
});
const heldTrip = z.object({
  settled: z.array(settledEffect),
  approvals: z.array(heldCallSchema),
  sleep: z
    .object({
      callIds: z.array(z.string()),
      until: z.number(),
      interruptedAt: z.number().optional(),
    })
    .optional(),
});
const inboxMessage = z.object({ kind: z.enum(['followUp', 'steer']), content: z.string() });

/**
 * Why a conversation is not one an agent writes, or undefined: one assistant message per settled trip, and every
 * tool call answered, in the order asked, right after the answer that asked for it (but the last answer's, whose
 * calls may still run or wait). A conversation cut short, or spliced, with its counts edited to match, fails it.
 */
export function conversationProblem(
  state: Pick<AgentState, 'messages' | 'trips'>,
): string | undefined {
  const { messages, trips } = state;
  const answers = messages.filter((message) => message.role === 'assistant').length;
  if (answers !== trips) return `it has ${answers} model answers for ${trips} trips`;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index]!;
    if (message.role === 'tool')
      return `message ${index} answers a tool call nobody asked for there`;
    if (message.role !== 'assistant' || index === messages.length - 1) continue;
    for (const call of message.toolCalls ?? []) {
      const answer = messages[index + 1];
      if (answer?.role !== 'tool' || answer.toolCallId !== call.id)
        return `tool call ${call.id} of message ${index} is not answered after it`;
      index += 1;
    }
  }
  return undefined;
}

/** Validates a stored agent state. */
export const agentStateSchema: z.ZodType<AgentState> = z
  .object({
    input: z.string(),
    messages: z.array(message),
    trips: count,
    usage: z.object({
      inputTokens: count,
      outputTokens: count,
      totalTokens: count,
      cachedInputTokens: count.optional(),
    }),
    held: heldTrip.optional(),
    inbox: z.array(inboxMessage).optional(),
    earlyDecisions: z
      .array(
        z.object({
          callId: z.string(),
          approved: z.boolean(),
          argsHash: z.string().optional(),
          by: z.string().optional(),
          reason: z.string().optional(),
        }),
      )
      .optional(),
  })
  .superRefine((state, context) => {
    const problem = conversationProblem(state as AgentState);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  }) as z.ZodType<AgentState>;
