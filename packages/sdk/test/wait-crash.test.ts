import {
  agentSignals,
  defineAgent,
  definePlanner,
  defineTool,
  pendingApprovals,
  sendApprovalDecision,
  waitUntilTool,
  type AgentResult,
  type Clock,
  type DurableStore,
  type ModelMessage,
  type PlannerResult,
} from '@cairn/sdk';
import {
  exploreCrashes,
  observeAgent,
  observePlanner,
  scriptedModel,
  type CrashReport,
  type CrashScenario,
  type Script,
} from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const runId = 'crash-harness-run';

/** The user messages of a conversation: the final answer names them, so a message lost or doubled shows. */
const userTexts = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'user').map((m) => (m as { content: string }).content);

/**
 * An agent with a refund the policy holds back, a note tool that sends the run a follow-up while it runs (as a
 * user typing during the trip would), and a sleep tool. Its last answer lists every user message it read.
 */
function supportWorld(script: Script) {
  const sideEffects: Record<string, number> = {};
  const record = (id: string) => {
    sideEffects[id] = (sideEffects[id] ?? 0) + 1;
  };
  const model = scriptedModel(script);
  const create = (store: DurableStore, clock: Clock) => {
    const tools = [
      defineTool({
        name: 'refund',
        description: 'Refunds an order.',
        input: z.object({ cents: z.number().int() }),
        execute: ({ cents }, ctx) => {
          record(ctx.toolCallId);
          return { refunded: cents };
        },
      }),
      defineTool({
        name: 'note',
        description: 'Takes a note.',
        input: z.object({ text: z.string() }),
        // Safe to run again after a crash: the follow-up it sends carries a key.
        idempotent: true,
        execute: async ({ text }, ctx) => {
          record(ctx.toolCallId);
          // Sent with a key: a note run again after a crash does not send it twice.
          await store.signal(ctx.runId, {
            name: agentSignals.followUp,
            payload: { content: `also: ${text}` },
            idempotencyKey: `note:${ctx.toolCallId}`,
          });
          return { noted: text };
        },
      }),
      waitUntilTool(),
    ];
    return defineAgent({
      name: 'support',
      model,
      tools,
      maxTrips: 8,
      approval: { tools: { refund: (args: { cents: number }) => args.cents > 10_000 } },
      durable: { store, clock, leaseMs: 30_000 },
    });
  };
  return {
    create,
    sideEffects: () => sideEffects,
    modelCalls: () => model.calls.length,
  };
}

/** Answers: trip 0 asks for a big refund and a note; trip 1 sleeps; trip 2 ends, naming what it read. */
const script: Script = (request, turn) => {
  if (turn === 0) {
    return {
      toolCalls: [
        { id: 'refund-1', name: 'refund', args: { cents: 120_000 } },
        { id: 'note-1', name: 'note', args: { text: 'customer is upset' } },
      ],
    };
  }
  if (turn === 1)
    return { toolCalls: [{ id: 'sleep-1', name: 'wait_until', args: { seconds: 3600 } }] };
  const refund = request.messages.find((m) => m.role === 'tool' && m.toolCallId === 'refund-1');
  // Whether the refund was let through: made, or in flight at a crash and so of unknown outcome.
  const rejected = (refund?.content as { error?: string } | undefined)?.error === 'TOOL_REJECTED';
  return { text: JSON.stringify({ read: userTexts(request.messages), letThrough: !rejected }) };
};

async function explore(decide: 'approve' | 'reject' | 'steer'): Promise<CrashReport> {
  const scenario: CrashScenario<string, AgentResult<unknown>> = {
    input: 'Refund order o-1.',
    setup: () => supportWorld(script),
    observe: observeAgent,
    idempotent: (key) => key.startsWith('note'),
    async onWaiting({ store, clock, wait }) {
      const approvals = pendingApprovals(wait.detail);
      if (approvals.length === 0) {
        // Asleep: time passes.
        if (wait.until !== null) await clock.advance(Math.max(0, wait.until - clock.now()));
        return;
      }
      const [call] = approvals;
      if (decide === 'steer') {
        await store.signal(runId, {
          name: agentSignals.steer,
          payload: { content: 'offer a voucher instead' },
          idempotencyKey: 'steer-1',
        });
        return;
      }
      await sendApprovalDecision(store, runId, {
        callId: call!.callId,
        approved: decide === 'approve',
        ...(decide === 'approve' ? { argsHash: call!.argsHash } : { reason: 'too much' }),
        by: 'ana',
      }).catch(() => undefined);
    },
  };
  return exploreCrashes(scenario);
}

describe('crash at every boundary of an agent that waits for approval, takes a follow-up and sleeps', () => {
  it.each(['approve', 'reject', 'steer'] as const)(
    'when the person chooses to %s: no signal lost or read twice, an approved call runs once, a rejected one never',
    async (decide) => {
      const report = await explore(decide);
      console.log(
        `wait crash exploration (${decide}): ${report.boundaries} boundaries covered ` +
          `(${Object.entries(report.byPoint)
            .map(([point, n]) => `${point}: ${n}`)
            .join(', ')})`,
      );
      expect(report.violations).toEqual([]);
      expect(report.boundaries).toBeGreaterThanOrEqual(15);
      // The approved refund in flight at a crash is reported unknown, never made again (the harness counts it).
      const unknown = new Set(report.cases.flatMap((c) => c.unknown));
      expect([...unknown]).toEqual(decide === 'approve' ? ['refund-1'] : []);
      // Every case ended with the output of the uninterrupted run, which names each message once.
      const read =
        decide === 'steer'
          ? ['Refund order o-1.', 'also: customer is upset', 'offer a voucher instead']
          : ['Refund order o-1.', 'also: customer is upset'];
      const output = JSON.parse(String(report.baseline.output)) as unknown;
      expect(output).toEqual({ read, letThrough: decide === 'approve' });
      expect(report.baselineSideEffects).toEqual(
        decide === 'approve' ? { 'refund-1': 1, 'note-1': 1 } : { 'note-1': 1 },
      );
    },
  );
});

describe('crash at every boundary of a planner whose node waits for approval', () => {
  it.each([true, false])(
    'approved: %s — the other branch runs once, the held node runs once if approved and never if not',
    async (approved) => {
      const report = await exploreCrashes<string, PlannerResult>({
        input: 'Book the trip',
        setup() {
          const sideEffects: Record<string, number> = {};
          const model = scriptedModel([
            {
              text: JSON.stringify({
                nodes: [
                  { id: 'hotel', capability: 'pay', input: { cents: 45_000 }, dependsOn: [] },
                  { id: 'note', capability: 'pay', input: { cents: 300 }, dependsOn: [] },
                ],
              }),
            },
            {
              text: JSON.stringify({
                nodes: [{ id: 'hostel', capability: 'pay', input: { cents: 900 }, dependsOn: [] }],
              }),
            },
          ]);
          const pay = defineTool({
            name: 'pay',
            description: 'Pays, with an idempotency key: safe to send again.',
            input: z.object({ cents: z.number().int() }),
            idempotent: true,
            execute: ({ cents }, ctx) => {
              sideEffects[ctx.toolCallId] = (sideEffects[ctx.toolCallId] ?? 0) + 1;
              return { paid: cents };
            },
          });
          return {
            create: (store, clock) =>
              definePlanner({
                name: 'trip',
                model,
                capabilities: [{ name: 'pay', description: 'Pay.', executable: pay }],
                approval: {
                  capabilities: { pay: (input: { cents: number }) => input.cents > 10_000 },
                },
                durable: { store, clock, leaseMs: 30_000 },
              }),
            sideEffects: () => sideEffects,
            modelCalls: () => model.calls.length,
          };
        },
        observe: observePlanner,
        // A payment in flight at a crash may be sent again (its key makes it safe); a rejected one never.
        idempotent: (key) => approved || key !== 'hotel',
        async onWaiting({ store, wait }) {
          const [held] = pendingApprovals(wait.detail);
          await sendApprovalDecision(store, runId, {
            callId: held!.callId,
            approved,
            ...(approved ? { argsHash: held!.argsHash } : { reason: 'no' }),
          }).catch(() => undefined);
        },
      });
      expect(report.violations).toEqual([]);
      expect(report.baselineSideEffects).toEqual(
        approved ? { note: 1, hotel: 1 } : { note: 1, hostel: 1 },
      );
    },
  );
});
