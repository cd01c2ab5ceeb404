/**
 * A run's page (`#/runs/<id>`): its facts, what it says as it streams (`live-text.ts`), its timeline, its plan and
 * child runs. It loads the run's history once, then follows it through an `EventSource` on the watch endpoint. The
 * browser's EventSource reconnects by itself and sends the last `id:` it saw (`Last-Event-ID`), so a dropped
 * connection neither loses nor repeats an event.
 */
import type {
  ApiError,
  EventsAnswer,
  RunAnswer,
  RunDetail,
  RunEvent,
  RunStatus,
} from './api-types.js';
import { ApiRequestError, getJson } from './api.js';
import { append, badge, clear, el, runLink, type Child } from './dom.js';
import { fmtAgo, fmtDate, fmtUsage } from './format.js';
import { createLiveText } from './live-text.js';
import { renderPlan, type RenderedPlan } from './plan.js';
import { buildTimeline, type Timeline } from './timeline-fold.js';
import { renderTimeline } from './timeline.js';
import type { View } from './view.js';

const finalStatuses: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'dead_lettered'];

/** The longest output the page shows; more is cut, saying how long it was. */
const maxOutputChars = 20_000;

/** Shows run `runId` in `container` until `view` ends. */
export function showRun(container: HTMLElement, runId: string, view: View): void {
  const path = `/api/runs/${encodeURIComponent(runId)}`;
  const header = el('div', { class: 'card' }, el('span', { class: 'muted', text: 'loading…' }));
  const live = el('span', { id: 'live-status', class: 'muted' });
  const liveText = el('div');
  const timeline = el('div');
  const planSection = el('div');
  const events: RunEvent[] = [];
  let lastSeq = 0;
  let run: RunDetail | null = null;
  let plan: RenderedPlan | null = null;
  /** The live text of each agent node's child run, made once and kept across redraws of the list. */
  const childText = new Map<string, HTMLElement>();
  const childTextOf = (childRunId: string, node: string): HTMLElement => {
    let shown = childText.get(childRunId);
    if (shown === undefined) {
      shown = createLiveText(
        `/api/runs/${encodeURIComponent(childRunId)}`,
        view,
        `node ${node}`,
      ).node;
      childText.set(childRunId, shown);
    }
    return shown;
  };
  let refreshTimer: ReturnType<typeof setTimeout> | undefined;
  // Set once the Live section exists: the run's text stream, read on when the run goes on.
  let resumeText: () => void = () => undefined;
  append(container, [
    el('p', {}, el('a', { href: '#/', text: '← all runs' })),
    el('h1', { class: 'mono', text: runId }),
    header,
    liveText,
    el('h2', {}, ['Timeline ', live]),
    timeline,
    planSection,
  ]);

  const drawTimeline = () => {
    clear(timeline).appendChild(renderTimeline(buildTimeline(events), run));
  };
  const drawRun = (shown: RunDetail) => {
    clear(header).appendChild(renderHeader(shown, buildTimeline(events)));
    plan?.dispose();
    plan = null;
    clear(planSection);
    if (shown.plan) {
      plan = renderPlan(shown.plan);
      append(planSection, el('div', {}, [el('h2', { text: 'Plan' }), plan.node]));
    }
    if (shown.children.length > 0) {
      append(planSection, [
        el('h2', { text: 'Child runs' }),
        el(
          'ul',
          { class: 'children' },
          shown.children.map((child) =>
            el('li', { 'data-child': child.runId }, [
              runLink(child.runId),
              ' ',
              badge(child.status),
              el('span', {
                class: 'muted',
                text: ` ${child.kind} ${child.name}, node ${child.node}`,
              }),
              // What the node's agent says, under the node, as it says it.
              child.kind === 'agent' ? childTextOf(child.runId, child.node) : null,
            ]),
          ),
        ),
      ]);
    }
  };
  // The run's record changes with its events (status, holder): read again shortly after a burst of them.
  const refresh = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      getJson<RunAnswer>(path).then(
        (answer) => {
          if (!view.alive) return;
          run = answer.run;
          drawRun(run);
          drawTimeline();
        },
        () => undefined, // the next event tries again
      );
    }, 200);
  };
  const receive = (event: RunEvent) => {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    events.push(event);
  };
  view.onCleanup(() => {
    clearTimeout(refreshTimer);
    plan?.dispose();
  });

  const follow = () => {
    const source = new EventSource(`${path}/watch?after=${lastSeq}`);
    view.onCleanup(() => source.close());
    const say = (className: string, text: string) => {
      live.className = className;
      live.textContent = text;
    };
    say('muted', 'connecting…');
    source.onopen = () => say('live', 'live');
    source.onmessage = (message: MessageEvent<string>) => {
      receive(JSON.parse(message.data) as RunEvent);
      drawTimeline();
      refresh();
      // The run does something: if its text stream ended because it waited, it goes on too.
      resumeText();
    };
    source.addEventListener('end', () => {
      source.close();
      say('muted', 'run ended');
      refresh();
      // What the run said last, if the stream had ended before (it waited) and the run ended meanwhile.
      resumeText();
    });
    source.addEventListener('gone', (message: MessageEvent<string>) => {
      source.close();
      const body = JSON.parse(message.data) as ApiError;
      say('muted', `stopped: ${body.code}: ${body.message}`);
    });
    source.onerror = () => {
      const closed = source.readyState === EventSource.CLOSED;
      say(closed ? 'muted' : 'reconnecting', closed ? 'disconnected' : 'reconnecting…');
    };
  };

  Promise.all([getJson<RunAnswer>(path), getJson<EventsAnswer>(`${path}/events`)]).then(
    ([runAnswer, eventsAnswer]) => {
      if (!view.alive) return;
      run = runAnswer.run;
      eventsAnswer.events.forEach(receive);
      drawRun(run);
      drawTimeline();
      // A run that ended still shows what it said, read from the first chunk: that stream ends at once.
      const text = createLiveText(path, view);
      liveText.appendChild(text.node);
      resumeText = text.resume;
      if (finalStatuses.includes(run.status)) {
        live.textContent = '';
        return;
      }
      follow();
    },
    (error: unknown) => {
      if (!view.alive) return;
      const failed = error instanceof ApiRequestError ? error : null;
      clear(header).appendChild(
        el('div', {
          class: 'notice',
          'data-error': failed?.code ?? '',
          text:
            failed?.status === 404
              ? 'No run with this id exists.'
              : `Could not load the run: ${(error as Error).message}`,
        }),
      );
    },
  );
}

function renderHeader(run: RunDetail, model: Timeline): HTMLElement {
  const facts: [string, Child][] = [
    ['status', [badge(run.status), run.cancelRequested ? ' (cancel requested)' : '']],
    ['definition', `${run.kind} ${run.name}`],
    [
      'holder',
      run.owner
        ? [
            el('span', { class: 'mono', text: run.owner }),
            run.held
              ? ' holds it now'
              : run.holderGone === true
                ? ' (gone: its process died; another worker takes the run over)'
                : ' (lease expired)',
          ]
        : 'none',
    ],
    ['epoch', String(run.epoch)],
    ['recoveries', String(run.recoveries)],
    ['created', fmtDate(run.createdAt)],
    ['updated', `${fmtDate(run.updatedAt)} (${fmtAgo(run.updatedAt)})`],
  ];
  // A planner's own state counts its child runs' usage too; the history has only its planning calls.
  if (run.plan?.usage) facts.push(['usage', `${fmtUsage(run.plan.usage)} with its child runs`]);
  else if (model.usage) facts.push(['usage', fmtUsage(model.usage)]);
  if (run.parent) facts.push(['parent', runLink(run.parent.runId)]);
  if (run.error) {
    facts.push([
      'error',
      [
        el('span', { class: 'mono', 'data-error-code': run.error.code, text: run.error.code }),
        ` ${run.error.message}`,
      ],
    ]);
  }
  if (run.waitingFor) {
    const waits: string[] = [];
    if (run.waitingFor.signals.length > 0)
      waits.push(`signals ${run.waitingFor.signals.join(', ')}`);
    if (run.waitingFor.until !== null) waits.push(`until ${fmtDate(run.waitingFor.until)}`);
    for (const approval of run.waitingFor.approvals) {
      waits.push(`approval of ${approval.tool || approval.callId || 'a call'}`);
    }
    facts.push(['waiting for', waits.join('; ') || 'a signal']);
  }
  const list = el('dl', { class: 'facts' });
  for (const [name, value] of facts) append(list, [el('dt', { text: name }), el('dd', {}, value)]);
  const card = el('div', {}, [
    run.encrypted
      ? el('div', {
          class: 'notice',
          'data-encrypted': 'true',
          text:
            "This run's payloads are encrypted, shown as (encrypted), and its history with them: start " +
            'cairn ui with --codec <module> to read them.',
        })
      : null,
    list,
  ]);
  if (run.output !== undefined) {
    let text = JSON.stringify(run.output, null, 2);
    if (text.length > maxOutputChars) {
      text = `${text.slice(0, maxOutputChars)}\n… (${text.length} characters in all)`;
    }
    append(card, [el('h2', { text: 'Output' }), el('pre', { class: 'output mono', text })]);
  }
  return card;
}
