import type {
  JSONSchema7,
  JSONValue,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider';
import type { JsonValue, ModelMessage, ToolSpec } from '@cairn/sdk';

type AssistantPart = Extract<LanguageModelV3Message, { role: 'assistant' }>['content'][number];

/**
 * Turns a Cairn conversation into a V3 prompt. Consecutive tool messages become one tool message, as the
 * AI SDK itself sends them; failed and outcome-unknown tool results are sent as error results.
 */
export function toPrompt(messages: readonly ModelMessage[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [];
  // Calls whose arguments were not a JSON object, by id: their error result quotes what the model sent.
  const invalidInputs = new Map<string, JsonValue>();
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content });
        break;
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
        break;
      case 'assistant': {
        const content: AssistantPart[] = [];
        if (message.content !== '') content.push({ type: 'text', text: message.content });
        for (const call of message.toolCalls ?? []) {
          if (!isJsonObject(call.args)) invalidInputs.set(call.id, call.args);
          content.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.name,
            // Arguments that were not a JSON object (unparseable input) go back as `{}`, as the AI SDK does:
            // providers reject anything else. The error result quotes the input instead.
            input: isJsonObject(call.args) ? call.args : {},
          });
        }
        if (content.length === 0) content.push({ type: 'text', text: '' });
        prompt.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const part: LanguageModelV3ToolResultPart = {
          type: 'tool-result',
          toolCallId: message.toolCallId,
          toolName: message.toolName,
          output: toolOutput(message, invalidInputs.get(message.toolCallId)),
        };
        const last = prompt.at(-1);
        if (last?.role === 'tool') last.content.push(part);
        else prompt.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return prompt;
}

function toolOutput(
  message: Extract<ModelMessage, { role: 'tool' }>,
  invalidInput: JsonValue | undefined,
): LanguageModelV3ToolResultOutput {
  const failed =
    message.isError === true || message.outcome === 'error' || message.outcome === 'unknown';
  let value = message.content as JSONValue;
  if (failed) {
    if (invalidInput !== undefined && isJsonObject(message.content)) {
      value = { ...message.content, input: invalidInput } as JSONValue;
    }
    return typeof value === 'string'
      ? { type: 'error-text', value }
      : { type: 'error-json', value };
  }
  return typeof value === 'string' ? { type: 'text', value } : { type: 'json', value };
}

/** Cairn tool specs as V3 function tools. */
export function toTools(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as JSONSchema7,
  }));
}

function isJsonObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
