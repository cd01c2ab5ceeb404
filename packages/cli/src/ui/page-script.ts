/**
 * The page's application, plain browser JavaScript: hash routes (`#/` the list, `#/runs/<id>` a run), the list
 * of runs polled every few seconds, and a run's page that loads its history once, then follows it through an
 * `EventSource` on the watch endpoint. The browser's EventSource reconnects by itself and sends the last `id:`
 * it saw (`Last-Event-ID`), so a dropped connection neither loses nor repeats an event.
 */
export const pageScript = String.raw`
var statuses = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled', 'suspended', 'dead_lettered'];
var listPollMs = 3000;
var listFilters = { status: '', kind: '', name: '' };
var current = { token: null, cleanups: [] };

function onCleanup(fn) { current.cleanups.push(fn); }

function navigate() {
  current.cleanups.forEach(function (fn) { fn(); });
  current = { token: {}, cleanups: [] };
  var hash = location.hash;
  var view = document.getElementById('view');
  clear(view);
  if (hash.indexOf('#/runs/') === 0) {
    var runId;
    try { runId = decodeURIComponent(hash.slice('#/runs/'.length)); } catch (error) { runId = null; }
    if (runId) return showRun(view, runId, current.token);
  }
  document.getElementById('where').textContent = 'runs';
  showList(view, current.token);
}

function showList(view, token) {
  var statusSelect = el('select', { name: 'status', 'aria-label': 'status' },
    [el('option', { value: '', text: 'any status' })].concat(statuses.map(function (status) {
      return el('option', { value: status, text: status });
    })));
  statusSelect.value = listFilters.status;
  var kind = el('input', { name: 'kind', placeholder: 'kind', value: listFilters.kind, 'aria-label': 'kind' });
  var name = el('input', { name: 'name', placeholder: 'name', value: listFilters.name, 'aria-label': 'name' });
  var count = el('span', { class: 'muted' });
  var body = el('tbody', {});
  var timer = null;
  append(view, [
    el('h1', { text: 'Runs' }),
    el('div', { class: 'filters' }, [statusSelect, kind, name, count]),
    el('table', { class: 'runs' }, [
      el('thead', {}, el('tr', {}, ['status', 'kind', 'name', 'run', 'updated', 'attempts', 'recoveries']
        .map(function (title) { return el('th', { text: title }); }))),
      body,
    ]),
  ]);
  function load() {
    clearTimeout(timer);
    listFilters = { status: statusSelect.value, kind: kind.value.trim(), name: name.value.trim() };
    var query = new URLSearchParams();
    Object.keys(listFilters).forEach(function (key) { if (listFilters[key]) query.set(key, listFilters[key]); });
    getJson('/api/runs?' + query.toString()).then(function (answer) {
      if (current.token !== token) return;
      renderRows(body, answer.runs);
      count.textContent = answer.runs.length + ' run' + (answer.runs.length === 1 ? '' : 's') +
        (answer.runs.length === answer.limit ? ': the oldest ' + answer.limit + ' only, narrow the filter' : '');
    }, function (error) {
      if (current.token !== token) return;
      count.textContent = 'could not load runs: ' + error.message;
    }).then(function () {
      if (current.token === token) timer = setTimeout(load, listPollMs);
    });
  }
  [statusSelect, kind, name].forEach(function (input) { input.addEventListener('change', load); });
  onCleanup(function () { clearTimeout(timer); });
  load();
}

function renderRows(body, runs) {
  clear(body);
  runs.slice().sort(function (a, b) { return b.updatedAt - a.updatedAt; }).forEach(function (run) {
    append(body, el('tr', { 'data-run': run.runId, 'data-status': run.status }, [
      el('td', {}, badge(run.status)),
      el('td', { text: run.kind }),
      el('td', { text: run.name }),
      el('td', { class: 'id' }, [runLink(run.runId),
        run.parent ? el('div', { class: 'muted', text: 'child of ' + run.parent.runId }) : null]),
      el('td', { title: fmtDate(run.updatedAt), text: fmtAgo(run.updatedAt) }),
      el('td', { title: 'claims of the run (its lease epoch)', text: run.epoch }),
      el('td', { text: run.recoveries }),
    ]));
  });
}

function showRun(view, runId, token) {
  document.getElementById('where').textContent = runId;
  var path = '/api/runs/' + encodeURIComponent(runId);
  var header = el('div', { class: 'card' }, el('span', { class: 'muted', text: 'loading…' }));
  var live = el('span', { id: 'live-status', class: 'muted' });
  var timeline = el('div', {});
  var planSection = el('div', {});
  var events = [];
  var lastSeq = 0;
  var run = null;
  var refreshTimer = null;
  append(view, [
    el('p', {}, el('a', { href: '#/', text: '← all runs' })),
    el('h1', { class: 'mono', text: runId }),
    header,
    el('h2', {}, ['Timeline ', live]),
    timeline,
    planSection,
  ]);

  function drawTimeline() { clear(timeline).appendChild(renderTimeline(buildTimeline(events), run)); }
  function drawRun() {
    clear(header).appendChild(renderHeader(run, buildTimeline(events)));
    if (planSection.firstChild && planSection.firstChild.dispose) planSection.firstChild.dispose();
    clear(planSection);
    if (run.plan) append(planSection, el('div', {}, [el('h2', { text: 'Plan' }), renderPlan(run.plan)]));
    if (run.children.length) {
      append(planSection, [el('h2', { text: 'Child runs' }), el('ul', { class: 'children' }, run.children.map(function (child) {
        return el('li', { 'data-child': child.runId }, [runLink(child.runId), ' ', badge(child.status),
          el('span', { class: 'muted', text: ' ' + child.kind + ' ' + child.name + ', node ' + child.node })]);
      }))]);
    }
  }
  function refresh() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(function () {
      getJson(path).then(function (answer) {
        if (current.token !== token) return;
        run = answer.run;
        drawRun();
        drawTimeline();
      }, function () { /* the next event tries again */ });
    }, 200);
  }
  function receive(event) {
    if (event.seq <= lastSeq) return;
    lastSeq = event.seq;
    events.push(event);
  }
  onCleanup(function () {
    clearTimeout(refreshTimer);
    if (planSection.firstChild && planSection.firstChild.dispose) planSection.firstChild.dispose();
  });

  Promise.all([getJson(path), getJson(path + '/events')]).then(function (answers) {
    if (current.token !== token) return;
    run = answers[0].run;
    answers[1].events.forEach(receive);
    drawRun();
    drawTimeline();
    if (['completed', 'failed', 'cancelled', 'dead_lettered'].indexOf(run.status) >= 0) {
      live.textContent = '';
      return;
    }
    follow();
  }, function (error) {
    if (current.token !== token) return;
    clear(header).appendChild(el('div', { class: 'notice', 'data-error': error.code || '',
      text: error.status === 404 ? 'No run with this id exists.' : 'Could not load the run: ' + error.message }));
  });

  function follow() {
    var source = new EventSource(path + '/watch?after=' + lastSeq);
    onCleanup(function () { source.close(); });
    live.className = 'muted';
    live.textContent = 'connecting…';
    source.onopen = function () { live.className = 'live'; live.textContent = 'live'; };
    source.onmessage = function (message) {
      receive(JSON.parse(message.data));
      drawTimeline();
      refresh();
    };
    source.addEventListener('end', function () {
      source.close();
      live.className = 'muted';
      live.textContent = 'run ended';
      refresh();
    });
    source.addEventListener('gone', function (message) {
      source.close();
      var body = JSON.parse(message.data);
      live.className = 'muted';
      live.textContent = 'stopped: ' + body.code + ': ' + body.message;
    });
    source.onerror = function () {
      live.className = source.readyState === EventSource.CLOSED ? 'muted' : 'reconnecting';
      live.textContent = source.readyState === EventSource.CLOSED ? 'disconnected' : 'reconnecting…';
    };
  }
}

function renderHeader(run, model) {
  var facts = [
    ['status', [badge(run.status), run.cancelRequested ? ' (cancel requested)' : '']],
    ['definition', run.kind + ' ' + run.name],
    ['holder', run.owner ? [el('span', { class: 'mono', text: run.owner }),
      run.held ? ' holds it now' : ' (lease expired)'] : 'none'],
    ['epoch', String(run.epoch)],
    ['recoveries', String(run.recoveries)],
    ['created', fmtDate(run.createdAt)],
    ['updated', fmtDate(run.updatedAt) + ' (' + fmtAgo(run.updatedAt) + ')'],
  ];
  // A planner's own state counts its child runs' usage too; the history has only its planning calls.
  if (run.plan && run.plan.usage) facts.push(['usage', fmtUsage(run.plan.usage) + ' with its child runs']);
  else if (model.usage) facts.push(['usage', fmtUsage(model.usage)]);
  if (run.parent) facts.push(['parent', runLink(run.parent.runId)]);
  if (run.error) {
    facts.push(['error', [el('span', { class: 'mono', 'data-error-code': run.error.code, text: run.error.code }),
      ' ' + run.error.message]]);
  }
  if (run.waitingFor) {
    var waits = [];
    if (run.waitingFor.signals.length) waits.push('signals ' + run.waitingFor.signals.join(', '));
    if (run.waitingFor.until !== null) waits.push('until ' + fmtDate(run.waitingFor.until));
    run.waitingFor.approvals.forEach(function (approval) {
      waits.push('approval of ' + (approval.tool || approval.callId || 'a call'));
    });
    facts.push(['waiting for', waits.join('; ') || 'a signal']);
  }
  var list = el('dl', { class: 'facts' });
  facts.forEach(function (fact) { append(list, [el('dt', { text: fact[0] }), el('dd', {}, fact[1])]); });
  var card = el('div', {}, list);
  if (run.output !== undefined) {
    var text = JSON.stringify(run.output, null, 2);
    if (text.length > 20000) text = text.slice(0, 20000) + '\n… (' + text.length + ' characters in all)';
    append(card, [el('h2', { text: 'Output' }), el('pre', { class: 'output mono', text: text })]);
  }
  return card;
}

window.addEventListener('hashchange', navigate);
navigate();
`;
