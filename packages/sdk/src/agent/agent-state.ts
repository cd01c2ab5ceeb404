import { z } from 'zod';
import type { ModelMessage, Usage } from '../model.js';

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

/** Validates a stored agent state. */
export const agentStateSchema: z.ZodType<AgentState> = z.object({
  input: z.string(),
  messages: z.array(message),
  trips: count,
  usage: z.object({
    inputTokens: count,
    outputTokens: count,
    totalTokens: count,
    cachedInputTokens: count.optional(),
  }),
}) as z.ZodType<AgentState>;
