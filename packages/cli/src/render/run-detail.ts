/** `runs show`: one run, field by field. */
import type { JsonValue } from '@cairn/sdk';
import { encryptedNote } from '../encrypted-view.js';
import type { RunSummary } from '../run-summary.js';
import { formatTime, formatValue } from './format.js';
import { describeHolder, statusPaint } from './run-list.js';
import type { Style } from './style.js';

/** A child run as `runs show` lists it. */
export interface ChildSummary {
  runId: string;
  kind: string;
  name: string;
  status: string;
}

/** Everything `runs show` says of a run; its `--json` form. */
export interface RunDetail extends RunSummary {
  /** The input it started from (an agent's prompt, a planner's goal), when its checkpoint keeps it. */
  input: JsonValue | null;
  /** The output of a completed run. */
  output: JsonValue | null;
  children: ChildSummary[];
}

/** The lines of `runs show`, label and value aligned; then, for a run shown encrypted, a line saying so. */
export function renderRunDetail(run: RunDetail, style: Style): string {
  const fields: Array<[string, string]> = [
    ['run', style.strong(run.runId)],
    ['kind', `${run.kind} ${run.name}`],
    [
      'status',
      statusPaint(run.status, style)(run.status) +
        (run.cancelRequested ? ' (cancel requested)' : ''),
    ],
    ['holder', describeHolder(run, style)],
  ];
  if (run.leaseUntil !== null) fields.push(['lease until', formatTime(run.leaseUntil)]);
  fields.push(['epoch', String(run.epoch)], ['recoveries', String(run.recoveries)]);
  if (run.parentRunId !== null) fields.push(['parent', run.parentRunId]);
  if (run.rootRunId !== null && run.rootRunId !== run.parentRunId)
    fields.push(['root', run.rootRunId]);
  for (const [at, child] of run.children.entries()) {
    fields.push([
      at === 0 ? 'children' : '',
      `${child.runId} (${child.kind} ${child.name}, ${child.status})`,
    ]);
  }
  fields.push(['created', formatTime(run.createdAt)], ['updated', formatTime(run.updatedAt)]);
  if (run.input !== null) fields.push(['input', formatValue(run.input)]);
  if (run.output !== null) fields.push(['output', formatValue(run.output)]);
  if (run.error !== null)
    fields.push(['error', style.bad(`${run.error.code}: ${run.error.message}`)]);
  const waiting = run.waitingFor;
  if (waiting !== null) {
    const waits: string[] = [];
    for (const approval of waiting.approvals) {
      const deadline =
        approval.deadline === null ? '' : `, decided by policy at ${formatTime(approval.deadline)}`;
      waits.push(
        `approval of ${approval.tool} ${formatValue(approval.args, 80)}: tool call ${style.strong(approval.callId)}, args hash ${approval.argsHash}${deadline}`,
      );
    }
    const signals = waiting.signals.filter(
      (name) => waiting.approvals.length === 0 || !name.startsWith('cairn.'),
    );
    if (signals.length > 0) waits.push(`signal ${signals.join(', ')}`);
    if (waiting.sleepingUntil !== null)
      waits.push(`sleeping until ${formatTime(waiting.sleepingUntil)}`);
    else if (waiting.until !== null) waits.push(`until ${formatTime(waiting.until)}`);
    for (const [at, wait] of waits.entries()) fields.push([at === 0 ? 'waits for' : '', wait]);
  }
  const width = Math.max(...fields.map(([label]) => label.length));
  const lines = fields.map(([label, value]) => `${style.faint(label.padEnd(width))}  ${value}`);
  if (run.encrypted) lines.push(style.faint(encryptedNote()));
  return lines.join('\n');
}
