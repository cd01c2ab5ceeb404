import type { Agent } from '../agent/define-agent.js';
import type { JsonObject } from '../json.js';
import { jsonSchemaOf, type AnyTool, type ToolArgs } from '../tool.js';

/** What a plan node can dispatch: a tool, called once, or an agent, run as a child run. */
export type Executable = AnyTool | Agent<unknown>;

/**
 * One thing a planner may put in its plan, as the planning model sees it. An agent runs as a child run in
 * the planner's store, under the planner's lease; its own `durable` options are not used.
 */
export interface Capability<Name extends string = string, E extends Executable = Executable> {
  /** The name plan nodes use. Letters, digits, `_` and `-`, at most 64. */
  name: Name;
  /** Told to the planning model: what it does and what its input means. */
  description: string;
  executable: E;
}

/**
 * What a capability's node is given, as an approval rule reads it: a tool's arguments (its input schema's
 * output), or an agent's task text.
 */
export type CapabilityInput<C extends Capability> =
  C['executable'] extends Agent<unknown> ? string : ToolArgs<C['executable']>;

/** True when the executable is an agent (it runs as a child run) rather than a tool. */
export function isAgent(executable: Executable): executable is Agent<unknown> {
  return 'kind' in executable && executable.kind === 'agent';
}

/** The JSON Schema of a capability's input, as the planning model is told it. */
export function capabilityInputSchema(capability: Capability): JsonObject {
  if (isAgent(capability.executable)) {
    return {
      type: 'string',
      description:
        'The task for the agent, as text. Any other JSON value is sent to it as JSON text.',
    };
  }
  return jsonSchemaOf(capability.executable.input);
}
