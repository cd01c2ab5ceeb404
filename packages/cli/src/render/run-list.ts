/** `runs list` and `runs show` as a person reads them. */
import type { RunStatus } from '@cairn/sdk';
import type { WaitingFor } from '@cairn/worker';
import { encryptedNote, unreadableCode } from '../encrypted-view.js';
import type { RunSummary } from '../run-summary.js';
import { formatTime } from './format.js';
import type { Paint, Style } from './style.js';
import { renderTable } from './table.js';

/** The look of a status: green done, red failed, yellow waiting or suspended. */
export function statusPaint(status: RunStatus, style: Style): Paint {
  switch (status) {
    case 'completed':
      return style.good;
    case 'failed':
    case 'dead_lettered':
      return style.bad;
    case 'waiting':
    case 'suspended':
    case 'cancelled':
      return style.warn;
    default:
      return style.accent;
  }
}

/** Who holds the run: its owner and whether that lease is alive, or `-`. */
export function describeHolder(run: RunSummary, style: Style): string {
  if (run.owner === null) return '-';
  if (run.held) return `${run.owner} ${style.good('(alive)')}`;
  // Its process died: the lease may still run, but another worker takes the run over after the grace.
  if (run.holderGone === true) return `${run.owner} ${style.warn('(gone: its process died)')}`;
  return `${run.owner} ${style.faint('(lease ran out)')}`;
}

/** What a waiting run waits for, on one line: approvals, signals, a time. */
export function describeWait(waitingFor: WaitingFor | null): string {
  if (waitingFor === null) return '';
  const parts: string[] = [];
  for (const approval of waitingFor.approvals) {
    parts.push(`approval of ${approval.tool} (call ${approval.callId})`);
  }
  const signals = waitingFor.signals.filter((name) => !name.startsWith('cairn.'));
  if (signals.length > 0) parts.push(`signal ${signals.join(', ')}`);
  if (waitingFor.sleepingUntil !== null)
    parts.push(`sleep until ${formatTime(waitingFor.sleepingUntil)}`);
  else if (waitingFor.until !== null) parts.push(`until ${formatTime(waitingFor.until)}`);
  return parts.length === 0 && waitingFor.signals.length > 0
    ? `signal ${waitingFor.signals.join(', ')}`
    : parts.join('; ');
}

/**
 * The table of `runs list`: one run a row, oldest first; under it, when some runs' payloads are encrypted and the
 * command has no codec, a line saying so.
 */
export function renderRunTable(runs: readonly RunSummary[], style: Style): string {
  if (runs.length === 0) return 'No runs.';
  const rows = runs.map((run) => [
    run.runId,
    run.kind,
    run.name,
    statusPaint(run.status, style)(run.status),
    describeHolder(run, style),
    formatTime(run.updatedAt),
    run.unreadable !== null
      ? style.bad(`${unreadableCode(run.unreadable)} (its rows cannot be read)`)
      : run.status === 'waiting'
        ? describeWait(run.waitingFor)
        : run.error === null
          ? ''
          : style.bad(run.error.code),
  ]);
  const table = renderTable(
    ['RUN', 'KIND', 'NAME', 'STATUS', 'HOLDER', 'UPDATED', 'WAITS FOR / ERROR'].map(style.strong),
    rows,
  );
  const encrypted = runs.filter((run) => run.encrypted).length;
  if (encrypted === 0) return table;
  const whose = `The payloads of ${encrypted} run${encrypted === 1 ? '' : 's'} above`;
  return `${table}\n${style.faint(encryptedNote(whose))}`;
}
