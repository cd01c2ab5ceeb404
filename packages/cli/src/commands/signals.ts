/** `cairn runs signal`, `approve` and `reject`: a client's signals, sent to a run's mailbox. */
import { userInfo } from 'node:os';
import {
  CairnError,
  RunNotFoundError,
  type JsonValue,
  type SignalReceipt,
  type StandingDecision,
} from '@cairn/sdk';
import type { CommandContext } from '../command-context.js';
import { refuseEncryptedWrite } from '../encrypted-view.js';

/** What a signal command prints of the store's receipt. */
function printReceipt(
  context: CommandContext,
  what: string,
  json: Record<string, JsonValue>,
  receipt: SignalReceipt,
): void {
  if (context.json) {
    context.printJson({
      ...json,
      seq: receipt.seq,
      duplicate: receipt.duplicate,
      ...(receipt.decision === undefined
        ? {}
        : { standing: receipt.decision as unknown as JsonValue }),
    });
    return;
  }
  const before =
    receipt.decision === undefined
      ? `already sent before (#${receipt.seq})`
      : `the call was decided before (#${receipt.seq}: ${described(receipt.decision)})`;
  context.print(
    receipt.duplicate
      ? `${what}: ${before}; this one changed nothing.`
      : `${what} (#${receipt.seq}).`,
  );
}

/** A standing decision in words: `approved by ana`, `rejected by bo: too expensive`. */
function described(decision: StandingDecision): string {
  const by = decision.by === undefined ? '' : ` by ${decision.by}`;
  const reason = decision.reason === undefined ? '' : `: ${decision.reason}`;
  return `${decision.approved ? 'approved' : 'rejected'}${by}${reason}`;
}

export async function signalRun(
  context: CommandContext,
  command: { runId: string; signal: string; payload: JsonValue; key?: string },
): Promise<number> {
  const { runId, signal, payload, key } = command;
  await refuseWhenEncrypted(context, runId, 'signal');
  const receipt = await context.client.signal(runId, signal, payload, {
    ...(key === undefined ? {} : { idempotencyKey: key }),
  });
  printReceipt(context, `Sent signal ${signal} to run ${runId}`, { runId, signal }, receipt);
  return 0;
}

/**
 * Approves or rejects a held tool call. An approval without `--args-hash` approves the arguments the run shows
 * it waits with, which is what an operator who just read `runs show` means; with it, the store refuses other
 * arguments. A rejection's reason is what the model reads as the call's result.
 */
export async function decideCall(
  context: CommandContext,
  command: {
    name: 'approve' | 'reject';
    runId: string;
    callId: string;
    argsHash?: string;
    reason?: string;
    by?: string;
  },
): Promise<number> {
  const { runId, callId, reason } = command;
  const by = command.by ?? whoDecides(context);
  const approved = command.name === 'approve';
  await refuseWhenEncrypted(context, runId, `${command.name} a call of`);
  const receipt = approved
    ? await context.client.approve(runId, callId, {
        argsHash: command.argsHash ?? (await pendingCall(context, runId, callId)).argsHash,
        by,
      })
    : await context.client.reject(runId, callId, {
        by,
        ...(reason === undefined ? {} : { reason }),
      });
  const decision = approved ? 'approved' : 'rejected';
  printReceipt(
    context,
    `${approved ? 'Approved' : 'Rejected'} tool call ${callId} of run ${runId}`,
    { runId, callId, decision },
    receipt,
  );
  return 0;
}

/** A signal's payload, and a decision's `by` and `reason`, are encoded for a run whose payloads are. */
async function refuseWhenEncrypted(
  context: CommandContext,
  runId: string,
  action: string,
): Promise<void> {
  const info = await context.client.get(runId);
  if (info !== undefined) refuseEncryptedWrite(info, action);
}

async function pendingCall(context: CommandContext, runId: string, callId: string) {
  const info = await context.client.get(runId);
  if (info === undefined) throw new RunNotFoundError(runId);
  const approvals = info.waitingFor?.approvals ?? [];
  const call = approvals.find((approval) => approval.callId === callId);
  if (call === undefined) {
    const waiting = approvals.map((approval) => approval.callId);
    throw new CairnError(
      'INVALID_ARGUMENT',
      `Run "${runId}" (${info.status}) waits for no decision on tool call "${callId}"` +
        (waiting.length === 0 ? '.' : `; it waits on ${waiting.join(', ')}.`),
      { data: { runId, callId, waitingOn: waiting } },
    );
  }
  return call;
}

/**
 * Who a decision is recorded as made by, without `--by`: the operating system's user running the command (as
 * `git` and `psql` name their user), else the command itself.
 */
function whoDecides(context: CommandContext): string {
  const fromEnv = context.env.USER ?? context.env.LOGNAME ?? context.env.USERNAME;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  try {
    return userInfo().username;
  } catch {
    return 'cairn cli';
  }
}
