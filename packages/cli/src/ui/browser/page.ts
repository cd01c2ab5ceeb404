/**
 * The page's entry module: hash routes, `#/` the list of runs and `#/runs/<id>` a run. Each navigation ends the view
 * before it (its timers and EventSources) and opens the next.
 */
import { clear } from './dom.js';
import { showList, type ListFilters } from './run-list.js';
import { showRun } from './run-page.js';
import { openView, type OpenView } from './view.js';

const runRoute = '#/runs/';

/** The run id of a route, or null for the list (an id that is not valid percent-encoding too). */
function routedRunId(hash: string): string | null {
  if (!hash.startsWith(runRoute)) return null;
  try {
    return decodeURIComponent(hash.slice(runRoute.length)) || null;
  } catch {
    return null;
  }
}

function element(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`The page has no #${id}.`);
  return found;
}

const main = element('view');
const where = element('where');
const filters: ListFilters = { status: '', kind: '', name: '' };
let current: OpenView | null = null;

function navigate(): void {
  current?.close();
  const view = openView();
  current = view;
  clear(main);
  const runId = routedRunId(location.hash);
  where.textContent = runId ?? 'runs';
  if (runId !== null) showRun(main, runId, view);
  else showList(main, view, filters);
}

window.addEventListener('hashchange', navigate);
navigate();
