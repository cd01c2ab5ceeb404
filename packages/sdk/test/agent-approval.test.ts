import {
  CairnError,
  defineAgent,
  defineTool,
  memoryStore,
  pendingApprovals,
  RunWaitingError,
  toolArgsHash,
  unstartedRunSnapshot,
  type ApprovalPolicy,
  type DurableStore,
  type ModelMessage,
} from '@cairn/sdk';
import { createFakeClock, scriptedModel, type ScriptedTurn } from '@cairn/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A refund tool that records every refund it makes. */
function refundTool() {
  const refunds: Array<{ cents: number; key: string }> = [];
  const tool = defineTool({
    name: 'refund',
    description: 'Refunds an order.',
    input: z.object({ order: z.string(), cents: z.number().int() }),
    execute: ({ cents }, ctx) => {
      refunds.push({ cents, key: ctx.idempotencyKey });
      return { refunded: cents };
    },
  });
  return { tool, refunds };
}

function lookupTool() {
  let calls = 0;
  const tool = defineTool({
    name: 'lookup',
    description: 'Looks an order up.',
    input: z.object({ order: z.string() }),
    execute: ({ order }) => {
      calls += 1;
      return { order, total: 150_000 };
    },
  });
  return { tool, calls: () => calls };
}

const bigRefund: ScriptedTurn[] = [
  {
    toolCalls: [
      { id: 'c-refund', name: 'refund', args: { order: 'o-1', cents: 120_000 } },
      { id: 'c-lookup', name: 'lookup', args: { order: 'o-1' } },
    ],
  },
  { text: 'Handled.' },
];

function setup(
  approval: ApprovalPolicy = {
    tools: { refund: (args: { cents: number }) => args.cents > 10_000 },
  },
  script: ScriptedTurn[] = bigRefund,
) {
  const clock = createFakeClock({ autoAdvance: true });
  const store = memoryStore({ clock });
  const refund = refundTool();
  const lookup = lookupTool();
  const model = scriptedModel(script);
  const agent = defineAgent({
    name: 'support',
    model,
    tools: [refund.tool, lookup.tool],
    approval,
    durable: { store, clock, leaseMs: 10_000 },
  });
  return { clock, store, refund, lookup, model, agent };
}

/** Runs `execute` and expects it to end waiting; returns the run id. */
async function startWaiting(agent: ReturnType<typeof setup>['agent']): Promise<string> {
  const error = await agent.execute('Refund order o-1', { runId: 'r-1' }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(RunWaitingError);
  return (error as RunWaitingError).runId;
}

/** A run of the support agent started by name, not taken up yet: its mailbox can be written first. */
async function queueRun(store: DurableStore, runId: string): Promise<void> {
  await store.create({
    runId,
    status: 'queued',
    kind: 'agent',
    name: 'support',
    signature: '',
    snapshot: unstartedRunSnapshot('Refund order o-1'),
  });
}

function toolAnswer(messages: readonly ModelMessage[], callId: string): ModelMessage | undefined {
  return messages.find((m) => m.role === 'tool' && m.toolCallId === callId);
}

describe('an agent whose tool call needs approval', () => {
  it('runs its other calls, then waits holding nothing, listing the call with its arguments and hash', async () => {
    const { store, refund, lookup, model, agent } = setup();
    const runId = await startWaiting(agent);
    expect(refund.refunds).toEqual([]);
    expect(lookup.calls()).toBe(1);
    const { run } = (await store.load(runId))!;
    expect(run).toMatchObject({ status: 'waiting', owner: null, leaseUntil: null });
    expect(run.wait?.signals).toContain('cairn.approval');
    expect(pendingApprovals(run.wait?.detail)).toEqual([
      {
        callId: 'c-refund',
        tool: 'refund',
        args: { order: 'o-1', cents: 120_000 },
        argsHash: toolArgsHash({ order: 'o-1', cents: 120_000 }),
        deadline: null,
      },
    ]);
    // Resumed before a decision: still waiting, nothing runs again, the model is not asked again.
    await expect(agent.resume(runId)).rejects.toBeInstanceOf(RunWaitingError);
    expect(lookup.calls()).toBe(1);
    expect(model.calls).toHaveLength(1);
  });

  it('runs the call once when approved with its arguments’ hash, and refuses an approval of other arguments', async () => {
    const { store, refund, lookup, model, agent } = setup();
    const runId = await startWaiting(agent);
    await expect(
      agent.approve(runId, 'c-refund', {
        argsHash: toolArgsHash({ order: 'o-1', cents: 999_999 }),
      }),
    ).rejects.toSatisfy((e) => e instanceof CairnError && e.code === 'INVALID_ARGUMENT');
    await expect(agent.approve(runId, 'c-nope', { argsHash: 'x' })).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'INVALID_ARGUMENT',
    );
    // Sent around the client (straight to the store): the store checks it the same way, and keeps nothing.
    await expect(
      store.signal(runId, {
        name: 'cairn.approval',
        payload: { callId: 'c-refund', approved: true, argsHash: 'forged' },
      }),
    ).rejects.toSatisfy((e) => e instanceof CairnError && e.code === 'INVALID_ARGUMENT');
    await expect(agent.resume(runId)).rejects.toBeInstanceOf(RunWaitingError);
    expect(refund.refunds).toEqual([]);
    const { argsHash } = pendingApprovals((await store.load(runId))!.run.wait?.detail)[0]!;
    const approved = { callId: 'c-refund', approved: true, argsHash, by: 'ana' };
    expect(await agent.approve(runId, 'c-refund', { argsHash, by: 'ana' })).toEqual({
      seq: 1,
      duplicate: false,
      decision: approved,
    });
    // A second click: accepted once.
    expect(await agent.approve(runId, 'c-refund', { argsHash, by: 'ana' })).toEqual({
      seq: 1,
      duplicate: true,
      decision: approved,
    });
    const result = await agent.resume(runId);
    expect(result.output).toBe('Handled.');
    expect(refund.refunds).toEqual([{ cents: 120_000, key: `${runId}:c-refund` }]);
    expect(lookup.calls()).toBe(1);
    expect(model.calls).toHaveLength(2);
    expect(toolAnswer(result.messages, 'c-refund')).toMatchObject({
      content: { refunded: 120_000 },
    });
    expect(await store.mailbox(runId)).toEqual([]);
    // The answers are in the order the model asked, right after its message.
    expect(result.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
    ]);
  });

  it('never runs a rejected call: the model reads the reason as its result', async () => {
    const { refund, agent } = setup();
    const runId = await startWaiting(agent);
    await agent.reject(runId, 'c-refund', {
      reason: 'over the limit for this customer',
      by: 'ana',
    });
    const result = await agent.resume(runId);
    expect(refund.refunds).toEqual([]);
    expect(toolAnswer(result.messages, 'c-refund')).toMatchObject({
      isError: true,
      content: {
        error: 'TOOL_REJECTED',
        message: expect.stringContaining('over the limit for this customer'),
      },
    });
  });

  it('decides by the policy’s onTimeout once the deadline passes with no decision', async () => {
    const policy: ApprovalPolicy = { tools: { refund: true }, timeoutMs: 60_000 };
    const { clock, refund, agent } = setup(policy);
    const runId = await startWaiting(agent);
    await expect(agent.resume(runId)).rejects.toBeInstanceOf(RunWaitingError);
    await clock.advance(60_000);
    const result = await agent.resume(runId);
    expect(refund.refunds).toEqual([]);
    expect(toolAnswer(result.messages, 'c-refund')).toMatchObject({
      content: { error: 'TOOL_REJECTED', message: expect.stringContaining('60000 ms') },
    });

    const failing = setup({ tools: { refund: true }, timeoutMs: 1_000, onTimeout: 'fail' });
    const failingRun = await startWaiting(failing.agent);
    await failing.clock.advance(1_000);
    await expect(failing.agent.resume(failingRun)).rejects.toSatisfy(
      (e) => e instanceof CairnError && e.code === 'APPROVAL_TIMEOUT',
    );
    expect((await failing.store.load(failingRun))?.run.status).toBe('failed');
  });

  it('gives up the calls waiting for a decision when steered, and reads the new instruction first', async () => {
    const { refund, agent, model } = setup();
    const runId = await startWaiting(agent);
    await agent.steer(runId, 'Do not refund; offer a voucher instead.');
    const result = await agent.resume(runId);
    expect(refund.refunds).toEqual([]);
    const lastRequest = model.calls.at(-1)!.messages;
    expect(lastRequest.at(-1)).toEqual({
      role: 'user',
      content: 'Do not refund; offer a voucher instead.',
    });
    expect(toolAnswer(result.messages, 'c-refund')).toMatchObject({
      content: { error: 'TOOL_REJECTED' },
    });
  });

  it('lets calls the policy does not hold run without waiting', async () => {
    const { refund, agent } = setup(undefined, [
      { toolCalls: [{ id: 'small', name: 'refund', args: { order: 'o-2', cents: 500 } }] },
      { text: 'ok' },
    ]);
    await expect(agent.execute('small refund')).resolves.toMatchObject({ output: 'ok' });
    expect(refund.refunds).toHaveLength(1);
  });

  it('refuses a decision sent before the call is held, through the client and raw alike: nothing is kept', async () => {
    const { store, refund, agent } = setup();
    await queueRun(store, 'early');
    const argsHash = toolArgsHash({ order: 'o-1', cents: 120_000 });
    const notWaiting = (e: unknown) =>
      e instanceof CairnError && e.code === 'INVALID_ARGUMENT' && e.data.reason === 'not waiting';
    await expect(agent.approve('early', 'c-refund', { argsHash })).rejects.toSatisfy(notWaiting);
    // Sent around the client, before the model asked for the call: the same answer.
    await expect(
      store.signal('early', {
        name: 'cairn.approval',
        payload: { callId: 'c-refund', approved: true, argsHash },
      }),
    ).rejects.toSatisfy(notWaiting);
    expect(await store.mailbox('early')).toEqual([]);
    await expect(agent.resume('early')).rejects.toBeInstanceOf(RunWaitingError);
    expect(refund.refunds).toEqual([]);
    // Once it waits, the same decision is accepted and applied.
    expect(await agent.approve('early', 'c-refund', { argsHash })).toMatchObject({
      duplicate: false,
    });
    await expect(agent.resume('early')).resolves.toMatchObject({ output: 'Handled.' });
    expect(refund.refunds).toHaveLength(1);
  });
});
