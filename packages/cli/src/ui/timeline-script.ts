/**
 * The run timeline, plain browser JavaScript: `buildTimeline` folds a run's `RunEvent`s (oldest first) into one
 * lane per attempt, each with rows for its trips or nodes and their effects; `renderTimeline` draws it. The page
 * folds the whole list again at every new event: a history is bounded, and one fold is simpler to trust than
 * an incremental one.
 *
 * Each lane has its own time axis, from its first event to its last: attempts are separated by lease waits
 * (seconds) while trips take milliseconds, so one axis for the run would squash every bar to a line. Something
 * started in one attempt and settled in a later one (a tool call in flight at a crash) stays in the lane where
 * it started, cut at that lane's end, and says that a later attempt settled it.
 *
 * An attempt that was taken over lost nothing the history shows: the history is written with checkpoints, and
 * the attempt that takes over re-records what the journal kept. So `attempt.abandoned`'s `lastSeq` is shown
 * (what was lost came after it), and no event is dropped for it.
 */
export const timelineScript = String.raw`
function buildTimeline(events) {
  var model = { lanes: [], truncatedAt: null, ended: null, usage: null };
  var units = {};
  var effects = {};

  // The lane of an event: the attempt it comes after, or an earlier one when it happened before that attempt
  // began. A new attempt re-records what the crashed one had journaled (its model answer, the tool call it
  // started), with the crashed attempt's times: that work belongs in the crashed attempt's lane.
  function laneAt(at) {
    if (model.lanes.length === 0) {
      // History truncated before the first attempt it kept: its events still need a lane.
      model.lanes.push(newLane({ epoch: null, owner: null, takenFrom: null, at: at, seq: 0 }));
    }
    for (var index = model.lanes.length - 1; index > 0; index -= 1) {
      if (model.lanes[index].startedAt <= at) return model.lanes[index];
    }
    return model.lanes[0];
  }
  function touch(target, at) {
    if (at < target.start) target.start = at;
    if (at > target.end) target.end = at;
  }
  function addUsage(usage) {
    if (!usage) return;
    model.usage = model.usage || { inputTokens: 0, outputTokens: 0 };
    model.usage.inputTokens += usage.inputTokens;
    model.usage.outputTokens += usage.outputTokens;
  }
  function rowFor(key, label, at, seq) {
    var target = laneAt(at);
    touch(target, at);
    var row = { key: key, label: label, start: at, end: null, ms: null, usage: null, seq: seq,
      lane: target, settledIn: null, effects: [] };
    target.rows.push(row);
    if (key !== null) units[key] = row;
    return row;
  }
  function planningRow(at, seq) {
    var target = laneAt(at);
    if (!target.planning) target.planning = rowFor(null, 'planning', at, seq);
    return target.planning;
  }

  events.forEach(function (event) {
    if (event.type === 'history.truncated') { model.truncatedAt = event.seq; return; }
    if (event.type === 'attempt.started') {
      model.lanes.push(newLane(event));
      return;
    }
    if (event.type === 'attempt.abandoned') {
      var gone = model.lanes.filter(function (l) { return l.epoch === event.epoch; })[0] || laneAt(event.at);
      gone.abandoned = { how: event.how, lastSeq: event.lastSeq };
      return;
    }
    var current = laneAt(event.at);
    touch(current, event.at);
    if (event.type === 'unit.started') {
      rowFor(event.unit, event.label, event.at, event.seq);
    } else if (event.type === 'unit.settled') {
      var row = units[event.unit];
      if (!row) row = rowFor(event.unit, event.label, event.startedAt !== undefined ? event.startedAt : event.at, event.seq);
      row.end = event.at;
      row.ms = event.ms !== undefined ? event.ms : event.at - row.start;
      row.usage = event.usage || null;
      if (row.lane !== current) row.settledIn = current;
      addUsage(event.usage);
    } else if (event.type === 'effect.started' || event.type === 'effect.settled') {
      var effect = event.type === 'effect.started' ? null : effects[event.effectId];
      if (!effect) {
        var start = event.type === 'effect.started' || event.ms === undefined ? event.at : event.at - event.ms;
        var owner = event.unit === null ? planningRow(start, event.seq)
          : units[event.unit] || rowFor(event.unit, event.unit, start, event.seq);
        effect = { id: event.effectId, name: event.name, kind: event.kind, start: start, end: null,
          seq: event.seq, outcome: null, lane: owner.lane, settledIn: null };
        owner.effects.push(effect);
        effects[event.effectId] = effect;
      }
      if (event.type === 'effect.settled') {
        effect.end = event.at;
        effect.outcome = event.outcome || null;
        effect.code = event.code;
        effect.ms = event.ms;
        effect.bytes = event.bytes;
        effect.usage = event.usage;
        effect.childRunId = event.childRunId;
        if (effect.lane !== current) effect.settledIn = current;
        // A unit's usage counts its effects'; a planning call belongs to no unit.
        if (event.unit === null) addUsage(event.usage);
      }
    } else if (event.type === 'signals') {
      current.marks.push(fmtTime(event.at) + ' signals: ' + event.names.join(', '));
    } else if (event.type === 'waiting') {
      current.marks.push(fmtTime(event.at) + ' waiting' +
        (event.signals.length ? ' for ' + event.signals.join(', ') : '') +
        (event.until !== null ? ' until ' + fmtDate(event.until) : ''));
    } else if (event.type === 'ended') {
      model.ended = event;
      current.marks.push(fmtTime(event.at) + ' ended ' + event.status + (event.code ? ' (' + event.code + ')' : ''));
    }
  });
  // A planning row is its planning calls: it has no unit events of its own.
  model.lanes.forEach(function (target) {
    var row = target.planning;
    if (!row || row.effects.some(function (effect) { return effect.end === null; })) return;
    row.end = Math.max.apply(null, row.effects.map(function (effect) { return effect.end; }));
    row.ms = row.end - row.start;
  });
  return model;
}

function newLane(event) {
  return { epoch: event.epoch, owner: event.owner, takenFrom: event.takenFrom, startedAt: event.at,
    start: event.at, end: event.at, seq: event.seq, abandoned: null, rows: [], marks: [], planning: null };
}

function renderTimeline(model, run) {
  var root = el('div', { class: 'timeline' });
  if (model.truncatedAt !== null) {
    append(root, el('div', { class: 'notice', text: 'The oldest events of this run were dropped to keep its ' +
      'history bounded (up to event #' + model.truncatedAt + ').' }));
  }
  if (model.lanes.length === 0) {
    append(root, el('p', { class: 'muted', text: run && run.status === 'queued'
      ? 'Queued: no worker has claimed this run yet.' : 'No events recorded for this run yet.' }));
  }
  model.lanes.forEach(function (current, index) {
    if (index > 0) append(root, transition(model.lanes[index - 1], current, index));
    append(root, renderLane(current, index, model, run));
  });
  return root;
}

// How an attempt that neither ended the run nor put it to wait stopped (the sdk's AbandonedHow), in words.
var abandonedWords = { taken_over: 'taken over', handed_over: 'handed over', suspended: 'suspended' };

function abandonedText(abandoned) {
  return abandonedWords[abandoned.how] || String(abandoned.how).replace(/_/g, ' ');
}

function transition(before, after, index) {
  var how = before.abandoned ? before.abandoned.how : null;
  var takeover = after.takenFrom !== null || how === 'taken_over';
  var gap = after.start - before.end;
  var text = takeover
    ? 'takeover: ' + after.owner + ' took the run over from ' + (after.takenFrom || before.owner)
    : how === 'suspended'
      ? 'resumed: ' + after.owner + ' resumed the run after ' + (before.owner || 'its holder') +
        ' suspended it (its store kept failing)'
      : 'handover: ' + after.owner + ' resumed the run' + (before.owner ? ' after ' + before.owner : '') +
        (how === 'handed_over' ? ' handed it over' : '');
  if (gap > 0) text += ', ' + fmtMs(gap) + ' later';
  if (before.abandoned) text += '; attempt ' + index + "'s last checkpointed event was #" + before.abandoned.lastSeq;
  return el('div', { class: 'takeover' + (takeover ? '' : ' handover'), 'data-kind': takeover ? 'takeover' : 'handover',
    text: text });
}

function renderLane(current, index, model, run) {
  var last = index === model.lanes.length - 1;
  var open = last && !model.ended && run && run.held;
  var node = el('section', { class: 'lane' + (current.abandoned ? ' abandoned' : ''),
    'data-epoch': current.epoch === null ? '' : current.epoch });
  var head = el('div', { class: 'lane-head' }, [
    el('span', { class: 'title', text: current.epoch === null ? 'earlier attempt' : 'attempt ' + (index + 1) }),
    current.epoch === null ? null : el('span', { class: 'muted', text: 'epoch ' + current.epoch }),
    current.owner ? el('span', { class: 'mono', text: current.owner }) : null,
    el('span', { class: 'muted', text: fmtTime(current.start) + ', ' + fmtMs(current.end - current.start) }),
    current.abandoned ? badge('abandoned: ' + abandonedText(current.abandoned), 'unknown') : null,
    open ? badge('running', 'running') : null,
  ]);
  append(node, head);
  var span = Math.max(current.end - current.start, 1);
  function place(start, end) {
    var from = Math.min(Math.max(start, current.start), current.end);
    var to = end === null ? current.end : Math.min(Math.max(end, from), current.end);
    return { left: ((from - current.start) / span * 100).toFixed(3) + '%',
      width: ((to - from) / span * 100).toFixed(3) + '%' };
  }
  current.rows.forEach(function (row) { append(node, renderRow(row, place, open)); });
  if (current.marks.length) {
    append(node, el('div', { class: 'marks' }, current.marks.map(function (mark) { return el('div', { text: mark }); })));
  }
  return node;
}

function renderRow(row, place, open) {
  var meta = [];
  if (row.end !== null) meta.push(fmtMs(row.ms));
  else meta.push(row.settledIn ? '' : open ? 'running' : 'not settled');
  if (row.usage) meta.push(fmtUsage(row.usage));
  if (row.settledIn) meta.push('settled by a later attempt');
  var bar = el('div', { class: 'bar' + (row.end === null || row.settledIn ? ' open' : ''),
    style: place(row.start, row.settledIn ? null : row.end), title: row.label });
  var effectBars = row.effects.map(function (effect) {
    return el('div', { class: 'bar ' + (effect.outcome || 'open'), style: place(effect.start, effect.settledIn ? null : effect.end),
      title: effect.name });
  });
  return el('div', { class: 'row', 'data-unit': row.key === null ? 'planning' : row.key }, [
    el('div', { class: 'row-label' }, [
      el('div', { class: 'name', text: row.label }),
      el('div', { class: 'meta', text: meta.filter(Boolean).join(' · ') }),
    ]),
    el('div', {}, [
      el('div', { class: 'track' }, bar),
      effectBars.length ? el('div', { class: 'effect-track' }, effectBars) : null,
      row.effects.length ? el('div', { class: 'effects' }, row.effects.map(function (effect) {
        return renderEffect(effect, open);
      })) : null,
    ]),
  ]);
}

function renderEffect(effect, open) {
  var outcome = effect.outcome === 'unknown' ? 'outcome unknown'
    : effect.outcome === 'error' ? 'error' : effect.outcome === 'ok' ? 'ok'
    : effect.settledIn ? 'settled later' : open ? 'in flight' : 'never settled';
  var details = [];
  if (effect.code) details.push(effect.code);
  if (typeof effect.ms === 'number') details.push(fmtMs(effect.ms));
  if (typeof effect.bytes === 'number') details.push(fmtBytes(effect.bytes));
  if (effect.usage) details.push(fmtUsage(effect.usage));
  if (effect.settledIn) details.push('settled by a later attempt');
  return el('span', { class: 'effect ' + (effect.outcome || 'open'), 'data-outcome': effect.outcome || 'open',
    'data-effect': effect.id }, [
    el('span', { class: 'mono', text: effect.name }), ' ',
    el('span', { class: 'outcome', text: outcome }),
    details.length ? el('span', { class: 'muted', text: ' · ' + details.join(' · ') }) : null,
    effect.childRunId ? [' · child ', runLink(effect.childRunId)] : null,
  ]);
}
`;
