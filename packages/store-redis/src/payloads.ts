import {
  checkReplacements,
  decisionSignal,
  snapshotInvalidError,
  type DurableStore,
  type JsonValue,
  type KeptSignalPayload,
} from '@cairn/sdk';
import { scriptKeys, type StoreContext } from './context.js';
import { replacePayloads } from './lua/replace-payloads.js';
import { readSignalPayloads } from './lua/signal-payloads.js';
import { toSignals } from './waits.js';

/** A standing decision's JSON (a `dec:` entry of the mailbox) as the payload it is. */
function toDecision(text: unknown, runId: string): KeptSignalPayload {
  try {
    return { name: decisionSignal, payload: JSON.parse(String(text)) as JsonValue };
  } catch {
    throw snapshotInvalidError(runId, 'a decision in its mailbox is not JSON');
  }
}

/**
 * What key rotation needs of the store: `signalPayloads` and `replacePayloads`, one script each on the run's keys
 * (all in its slot). Consumed signals are not kept here (their `sig:` entries go with the checkpoint that consumes
 * them), so they are neither returned nor replaced; standing decisions are. Each call first awaits `layoutCurrent`,
 * as every call on a run does.
 */
export function payloadOperations(
  ctx: StoreContext,
  layoutCurrent: () => Promise<void>,
): Required<Pick<DurableStore, 'signalPayloads' | 'replacePayloads'>> {
  return {
    async signalPayloads(runId) {
      await layoutCurrent();
      const [signals, decisions] = (await ctx.gate.script(
        'read signal payloads',
        readSignalPayloads,
        scriptKeys(ctx, runId),
        [],
      )) as [unknown, unknown];
      return [
        ...toSignals(signals, runId).map(({ name, payload }) => ({ name, payload })),
        ...(Array.isArray(decisions) ? decisions.map((text) => toDecision(text, runId)) : []),
      ];
    },

    async replacePayloads(runId, incarnation, replacements) {
      checkReplacements(runId, replacements);
      await layoutCurrent();
      if (replacements.size === 0) return 0;
      const found = await ctx.gate.script(
        'replace payloads',
        replacePayloads,
        scriptKeys(ctx, runId),
        [incarnation, ...[...replacements].flat()],
      );
      return Number(found);
    },
  };
}
