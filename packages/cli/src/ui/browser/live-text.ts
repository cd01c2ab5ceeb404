/**
 * The Live section of a run's page: what the run's model calls stream, as it comes, grouped by unit (the model call
 * that said it) in the order the units began: text as it is, reasoning muted, and a line naming each tool a model
 * starts to call (its input, JSON deltas, is left out), which says how the call settled once it has. Text goes in
 * as text nodes, never as HTML.
 *
 * A `superseded` chunk means its unit's call is made again (a retry, or a new holder after a crash): everything
 * the unit said before no longer counts. It stays on the page, struck through and marked, so that what the reader
 * saw does not vanish under them, and the unit's new text starts after it.
 *
 * It reads `/api/runs/<id>/stream` through an `EventSource`: each chunk comes once, its position as the SSE id, so
 * a dropped connection resumes where it was. The stream ends (`end`) when the run ends or waits; the run's page
 * calls `resume` when the run goes on. `gone` (the run was discarded, the store failed for good) and `none` (the
 * store keeps no streams) stop it for good.
 */
import type { ApiError, StreamChunk, ToolOutcomePart } from './api-types.js';
import { append, el } from './dom.js';
import type { View } from './view.js';

/** The Live section, and its stream. */
export interface LiveText {
  /** The section: hidden until the run has said something. */
  readonly node: HTMLElement;
  /** Reads the stream on from where it ended, if it ended: the run that waited goes on, or it ended since. */
  resume(): void;
}

/** What a unit shows: its box, and the part of it that holds the current try's text. */
interface UnitBox {
  box: HTMLElement;
  said: HTMLElement;
}

/**
 * The Live section of the run whose API path is `runPath`, reading from the first chunk until `view` ends. `title`
 * heads it: `Live` for the run's own page, a planner node's name for the child run that node runs.
 */
export function createLiveText(runPath: string, view: View, title = 'Live'): LiveText {
  const status = el('span', { class: 'stream-status muted' });
  const units = el('div', { class: 'live-units' });
  const node = el('section', { class: 'live', hidden: true }, [
    el(title === 'Live' ? 'h2' : 'h3', {}, [`${title} `, status]),
    units,
  ]);
  const boxes = new Map<string, UnitBox>();
  /** The line of each tool call shown, by its id: its outcome, said by the tool call's own unit, goes there. */
  const toolLines = new Map<string, HTMLElement>();
  let after = 0;
  let source: EventSource | null = null;
  /** `ended` may be resumed; `stopped` is for good. */
  let state: 'reading' | 'ended' | 'stopped' = 'ended';

  const boxOf = (unit: string): UnitBox => {
    const known = boxes.get(unit);
    if (known !== undefined) return known;
    const said = el('div', { class: 'said' });
    const box = el('div', { class: 'unit', 'data-unit': unit }, [
      el('div', { class: 'unit-name mono muted', text: unit }),
      said,
    ]);
    boxes.set(unit, { box, said });
    append(units, box);
    node.hidden = false;
    return { box, said };
  };

  const show = ({ unit, part }: StreamChunk) => {
    switch (part.type) {
      case 'text': {
        const { said } = boxOf(unit);
        // One text node per run of text: the browser lays out one string, however many chunks it came in.
        if (said.lastChild instanceof Text) said.lastChild.appendData(part.text);
        else said.appendChild(document.createTextNode(part.text));
        return;
      }
      case 'reasoning': {
        const { said } = boxOf(unit);
        const last = said.lastElementChild;
        if (said.lastChild === last && last?.classList.contains('reasoning') === true) {
          last.appendChild(document.createTextNode(part.text));
        } else append(said, el('span', { class: 'reasoning', text: part.text }));
        return;
      }
      case 'tool-input-start': {
        const line = el('div', { class: 'tool-call', 'data-tool': part.toolName }, [
          'calls ',
          el('span', { class: 'mono', text: part.toolName }),
        ]);
        toolLines.set(part.toolCallId, line);
        append(boxOf(unit).said, line);
        return;
      }
      case 'tool-input':
        return;
      case 'tool-outcome': {
        // A call the page showed no line for (its start was not streamed) has nowhere to say it.
        const line = toolLines.get(part.toolCallId);
        if (line === undefined) return;
        // A later outcome for the same call (made again after its holder was lost) replaces the earlier one.
        line.querySelector('.tool-outcome')?.remove();
        append(line, toolOutcome(part));
        return;
      }
      case 'sealed': {
        // Encoded by a payload codec the page's server was not started with: never shown as bytes.
        const { said } = boxOf(unit);
        if (
          said.lastElementChild?.classList.contains('encrypted') !== true ||
          said.lastChild !== said.lastElementChild
        )
          append(said, el('span', { class: 'encrypted muted', text: '(encrypted)' }));
        return;
      }
      case 'superseded': {
        const shown = boxes.get(unit);
        // A unit that showed nothing yet has nothing to strike through.
        if (shown === undefined || !shown.said.hasChildNodes()) return;
        shown.said.classList.add('superseded');
        const said = el('div', { class: 'said' });
        append(shown.box, [
          el('div', { class: 'superseded-note', text: 'superseded: this call was made again' }),
          said,
        ]);
        boxes.set(unit, { box: shown.box, said });
        return;
      }
      default:
        return part satisfies never;
    }
  };

  const stop = (next: 'ended' | 'stopped', text: string) => {
    source?.close();
    source = null;
    state = next;
    status.textContent = text;
  };

  const read = () => {
    if (!view.alive || state !== 'ended') return;
    state = 'reading';
    const opened = new EventSource(`${runPath}/stream?after=${after}`);
    source = opened;
    status.textContent = 'streaming…';
    opened.onmessage = (message: MessageEvent<string>) => {
      const chunk = JSON.parse(message.data) as StreamChunk;
      if (chunk.position <= after) return;
      after = chunk.position;
      show(chunk);
    };
    opened.addEventListener('end', () => stop('ended', ''));
    opened.addEventListener('gone', (message: MessageEvent<string>) => {
      const error = JSON.parse(message.data) as ApiError;
      stop('stopped', `stopped: ${error.code}: ${error.message}`);
    });
    opened.addEventListener('none', () => {
      stop('stopped', '');
      node.hidden = true;
    });
  };

  view.onCleanup(() => stop('stopped', ''));
  read();
  return { node, resume: read };
}

/** How a tool call settled, after its line: `ok`, or the error or why its outcome is unknown, in words. */
function toolOutcome({ outcome, errorText }: ToolOutcomePart): HTMLElement {
  const said = outcome === 'ok' ? 'ok' : outcome === 'error' ? 'error' : 'outcome unknown';
  return el('span', { class: `tool-outcome ${outcome}`, 'data-outcome': outcome }, [
    ' → ',
    el('span', { class: 'outcome', text: said }),
    errorText === undefined ? null : `: ${errorText}`,
  ]);
}
