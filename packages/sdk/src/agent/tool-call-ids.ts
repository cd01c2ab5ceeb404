import type { ModelMessage, ToolCall } from '../model.js';

/**
 * The tool calls of one model answer, each with an id no other call of the run has: the id its effect, its
 * idempotency key and its answer in the conversation are keyed by. A call keeps the model's id unless it is
 * empty, an earlier call of the answer has it (a model that repeats an id), or a call of an earlier trip has it
 * (a server that numbers calls per answer, `call_0` in every trip: one idempotency key for two refunds). Such a
 * call gets `<id>_<index>` (`call-<trip>-<index>` for an empty id), its position in the answer appended, and
 * `_<n>` after that while the result is taken. Only letters, digits, `_` and `-` are added, as providers accept
 * in ids. A function of the conversation before the answer and the journaled answer, so a resumed run derives
 * the same ids.
 */
export function distinctToolCallIds(
  calls: readonly ToolCall[],
  trip: number,
  conversation: readonly ModelMessage[],
): ToolCall[] {
  if (calls.length === 0) return [];
  const earlier = conversationIds(conversation);
  const assigned = new Set<string>();
  // Every id of the answer and the conversation, gathered only once a call needs another id (rarely).
  let taken: Set<string> | undefined;
  return calls.map((call, index) => {
    let id = call.id;
    if (id === '' || assigned.has(id) || earlier.has(id)) {
      taken ??= new Set([...earlier, ...calls.map((each) => each.id)]);
      const base = id === '' ? `call-${trip}-${index}` : `${id}_${index}`;
      id = base;
      for (let n = 2; taken.has(id); n += 1) id = `${base}_${n}`;
      taken.add(id);
    }
    assigned.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/** The ids of the tool calls of the earlier trips. */
function conversationIds(conversation: readonly ModelMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const message of conversation) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) ids.add(call.id);
  }
  return ids;
}
