/** The list of runs (`#/`): filtered by status, kind and name, newest change first, read again every few seconds. */
import type { RunListAnswer, RunStatus, RunSummary } from './api-types.js';
import { getJson } from './api.js';
import { append, badge, clear, el, runLink } from './dom.js';
import { fmtAgo, fmtDate } from './format.js';
import type { View } from './view.js';

/** The list's filters, kept while the user looks at a run and comes back. */
export interface ListFilters {
  status: string;
  kind: string;
  name: string;
}

const statuses: readonly RunStatus[] = [
  'queued',
  'running',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'suspended',
  'dead_lettered',
];

const listPollMs = 3000;

/** Shows the list in `container` until `view` ends, with `filters` (which it updates as the user changes them). */
export function showList(container: HTMLElement, view: View, filters: ListFilters): void {
  const statusSelect = el('select', { name: 'status', 'aria-label': 'status' }, [
    el('option', { value: '', text: 'any status' }),
    statuses.map((status) => el('option', { value: status, text: status })),
  ]);
  statusSelect.value = filters.status;
  const kind = el('input', {
    name: 'kind',
    placeholder: 'kind',
    value: filters.kind,
    'aria-label': 'kind',
  });
  const name = el('input', {
    name: 'name',
    placeholder: 'name',
    value: filters.name,
    'aria-label': 'name',
  });
  const count = el('span', { class: 'muted' });
  const body = el('tbody');
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A change while a read is under way starts another: only the latest one's answer is shown and polls on.
  let latest = 0;
  const titles = ['status', 'kind', 'name', 'run', 'updated', 'attempts', 'recoveries'];
  append(container, [
    el('h1', { text: 'Runs' }),
    el('div', { class: 'filters' }, [statusSelect, kind, name, count]),
    el('table', { class: 'runs' }, [
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          titles.map((title) => el('th', { text: title })),
        ),
      ),
      body,
    ]),
  ]);

  const load = async () => {
    clearTimeout(timer);
    const round = (latest += 1);
    const current = () => view.alive && round === latest;
    filters.status = statusSelect.value;
    filters.kind = kind.value.trim();
    filters.name = name.value.trim();
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value);
    try {
      const answer = await getJson<RunListAnswer>(`/api/runs?${query.toString()}`);
      if (!current()) return;
      renderRows(body, answer.runs);
      const { length } = answer.runs;
      const encrypted = answer.runs.filter((run) => run.encrypted).length;
      count.textContent =
        `${length} run${length === 1 ? '' : 's'}` +
        (length === answer.limit ? `: the oldest ${answer.limit} only, narrow the filter` : '') +
        (encrypted === 0 ? '' : `; ${encryptedNote(encrypted)}`);
    } catch (error) {
      if (!current()) return;
      count.textContent = `could not load runs: ${(error as Error).message}`;
    }
    if (current()) timer = setTimeout(() => void load(), listPollMs);
  };
  for (const input of [statusSelect, kind, name]) {
    input.addEventListener('change', () => void load());
  }
  view.onCleanup(() => clearTimeout(timer));
  void load();
}

/** Said once above the list: the server reads runs a codec encrypted without it. */
function encryptedNote(runs: number): string {
  return (
    `the payloads of ${runs} run${runs === 1 ? '' : 's'} are encrypted: start cairn ui with ` +
    '--codec <module> to read them'
  );
}

function renderRows(body: HTMLElement, runs: readonly RunSummary[]): void {
  clear(body);
  const newestFirst = [...runs].sort((a, b) => b.updatedAt - a.updatedAt);
  for (const run of newestFirst) {
    append(
      body,
      el('tr', { 'data-run': run.runId, 'data-status': run.status }, [
        el('td', {}, badge(run.status)),
        el('td', { text: run.kind }),
        el('td', { text: run.name }),
        el('td', { class: 'id' }, [
          runLink(run.runId),
          run.parent ? el('div', { class: 'muted', text: `child of ${run.parent.runId}` }) : null,
          run.encrypted ? el('div', { class: 'muted', text: 'payloads encrypted' }) : null,
          run.unreadable === undefined
            ? null
            : el('div', { class: 'unreadable', text: `unreadable: ${run.unreadable}` }),
        ]),
        el('td', { title: fmtDate(run.updatedAt), text: fmtAgo(run.updatedAt) }),
        el('td', { title: 'claims of the run (its lease epoch)', text: run.epoch }),
        el('td', { text: run.recoveries }),
      ]),
    );
  }
}
