import type { TracerProvider } from '@opentelemetry/api';
import { CairnError, type DurableDefinition, type DurableOptions } from '@cairn/sdk';

/** Anything a worker can run: an agent, a planner, or any durable definition with a kind and a name. */
export interface Runnable {
  readonly kind: string;
  readonly name: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly definition: DurableDefinition<any, any, any>;
  /** The durable settings it was defined with (an agent's or planner's `durable`). */
  readonly durable?: Partial<DurableOptions> | undefined;
  /** The tracer provider it was defined with. */
  readonly tracerProvider?: TracerProvider | undefined;
}

/** The definitions a worker runs, by kind and name. */
export class DefinitionRegistry {
  private readonly byKey = new Map<string, Runnable>();

  constructor(runnables: readonly Runnable[]) {
    for (const runnable of runnables) {
      const key = keyOf(runnable.kind, runnable.name);
      if (this.byKey.has(key)) {
        throw new CairnError(
          'INVALID_ARGUMENT',
          `Two ${runnable.kind} definitions are named "${runnable.name}"; a worker needs one of each.`,
        );
      }
      this.byKey.set(key, runnable);
    }
  }

  get(kind: string, name: string): Runnable | undefined {
    return this.byKey.get(keyOf(kind, name));
  }

  /** What `claimable` is asked for. */
  get keys(): Array<{ kind: string; name: string }> {
    return [...this.byKey.values()].map(({ kind, name }) => ({ kind, name }));
  }
}

function keyOf(kind: string, name: string): string {
  return `${kind}\u0000${name}`;
}
