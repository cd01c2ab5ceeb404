/**
 * The page's stylesheet, served inline: the page loads nothing but its own API (no CDN, no font, no build).
 * Colours carry meaning (a status, an effect's outcome), so each also has a text label next to it.
 */
export const pageStyle = `
:root {
  --fg: #1d232b; --muted: #5f6b7a; --line: #d9dee5; --bg: #f6f7f9; --card: #fff;
  --ok: #1f8a4c; --error: #c62828; --unknown: #b26a00; --running: #1565c0; --waiting: #a15c00;
  --queued: #6b7785; --suspended: #6a3fb5; --dead: #7b1f1f;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
}
body { margin: 0; }
header.top { display: flex; gap: 1em; align-items: baseline; padding: .7em 1.2em; background: #20262e; color: #fff; }
header.top a { color: #fff; text-decoration: none; font-weight: 600; }
header.top .where { color: #aab4c0; font-size: .9em; }
main { padding: 1em 1.2em 3em; max-width: 1400px; }
a { color: #1558b0; }
h1 { font-size: 1.3em; margin: .2em 0 .6em; word-break: break-all; }
h2 { font-size: 1.05em; margin: 1.4em 0 .5em; }
.muted { color: var(--muted); }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .8em 1em; }
.filters { display: flex; gap: .6em; flex-wrap: wrap; margin-bottom: .8em; align-items: center; }
.filters input, .filters select { font: inherit; padding: .25em .4em; }
table.runs { border-collapse: collapse; width: 100%; background: var(--card); }
table.runs th, table.runs td { text-align: left; padding: .4em .6em; border-bottom: 1px solid var(--line); }
table.runs th { font-weight: 600; color: var(--muted); font-size: .9em; }
table.runs td.id { word-break: break-all; }
table.runs td.id .unreadable { color: var(--error); font-size: .88em; }
.badge { display: inline-block; padding: .05em .5em; border-radius: 9px; font-size: .85em; font-weight: 600;
  color: #fff; background: var(--queued); white-space: nowrap; }
.badge.completed, .badge.ok { background: var(--ok); }
.badge.failed, .badge.error { background: var(--error); }
.badge.running, .badge.ready { background: var(--running); }
.badge.waiting, .badge.awaiting { background: var(--waiting); }
.badge.suspended { background: var(--suspended); }
.badge.dead_lettered { background: var(--dead); }
.badge.unknown { background: var(--unknown); }
.badge.pending, .badge.cancelled, .badge.queued { background: var(--queued); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25em 1em; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; word-break: break-all; }
pre.output { max-height: 16em; overflow: auto; background: #f0f2f5; padding: .5em; margin: 0; white-space: pre-wrap; }
.notice { padding: .5em .8em; border-radius: 4px; background: #fff4e0; border: 1px solid #f0c987; margin: .5em 0; }
#live-status { font-size: .85em; }
#live-status.live::before { content: "● "; color: var(--ok); }
#live-status.reconnecting::before { content: "● "; color: var(--unknown); }
.timeline { display: flex; flex-direction: column; gap: 0; }
.lane { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .5em .8em .7em; }
.lane.abandoned { border-color: var(--unknown); background: repeating-linear-gradient(135deg, #fff, #fff 12px,
  #fffaf0 12px, #fffaf0 24px); }
.lane-head { display: flex; gap: .8em; align-items: baseline; flex-wrap: wrap; margin-bottom: .4em; }
.lane-head .title { font-weight: 600; }
.row { display: grid; grid-template-columns: 13em 1fr; gap: .8em; padding: .3em 0; border-top: 1px dashed #eceff3; }
.row-label .name { font-weight: 600; }
.row-label .meta { color: var(--muted); font-size: .85em; }
.track { position: relative; height: 14px; background: #f0f2f5; border-radius: 3px; margin-top: .2em; }
.bar { position: absolute; top: 0; height: 14px; min-width: 3px; border-radius: 3px; background: #8fa9c9; }
.bar.open { background: repeating-linear-gradient(90deg, #8fa9c9, #8fa9c9 6px, #c7d5e6 6px, #c7d5e6 10px); }
.effect-track { position: relative; height: 8px; margin-top: 3px; }
.effect-track .bar { height: 8px; background: var(--queued); }
.effect-track .bar.ok { background: var(--ok); }
.effect-track .bar.error { background: var(--error); }
.effect-track .bar.unknown { background: var(--unknown); }
.effects { display: flex; flex-wrap: wrap; gap: .3em .5em; margin-top: .35em; }
.effect { border: 1px solid var(--line); border-left: 4px solid var(--queued); border-radius: 3px;
  padding: .05em .45em; font-size: .88em; background: #fff; }
.effect.ok { border-left-color: var(--ok); }
.effect.error { border-left-color: var(--error); }
.effect.unknown { border-left-color: var(--unknown); background: #fff6e6; }
.effect .outcome { font-weight: 600; }
.effect.unknown .outcome { color: var(--unknown); text-transform: uppercase; letter-spacing: .02em; }
.effect.error .outcome { color: var(--error); }
.marks { margin-top: .3em; font-size: .88em; color: var(--muted); }
.takeover { margin: .35em 0 .35em 2em; padding: .3em .7em; border-left: 3px solid var(--unknown);
  color: #6b4200; font-weight: 600; }
.takeover.handover { border-left-color: var(--queued); color: var(--muted); }
.dag { position: relative; display: flex; gap: 3.5em; padding: .8em; background: var(--card);
  border: 1px solid var(--line); border-radius: 6px; overflow-x: auto; }
.dag svg { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; }
.dag .layer { display: flex; flex-direction: column; gap: .8em; justify-content: center; position: relative; }
.dag .node { border: 1px solid var(--line); border-radius: 5px; padding: .35em .6em; min-width: 9em;
  background: #fff; position: relative; }
.dag .node .id { font-weight: 600; }
.dag .node[data-state="completed"] { border-color: var(--ok); }
.dag .node[data-state="failed"] { border-color: var(--error); }
.dag .node[data-state="unknown"] { border-color: var(--unknown); }
.dag .node[data-state="running"] { border-color: var(--running); }
ul.children { margin: .3em 0; padding-left: 1.2em; }
.stream-status { font-size: .85em; font-weight: normal; }
.live-units { display: flex; flex-direction: column; gap: .5em; }
.unit { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .4em .8em .6em; }
.unit-name { font-size: .8em; margin-bottom: .2em; }
.said { white-space: pre-wrap; overflow-wrap: anywhere; }
.said .reasoning { color: var(--muted); font-style: italic; }
.said .tool-call { color: var(--muted); font-size: .9em; margin: .15em 0; }
.said .tool-outcome.ok .outcome { color: var(--ok); }
.said .tool-outcome.error .outcome { color: var(--error); }
.said .tool-outcome.unknown .outcome { color: var(--unknown); text-transform: uppercase; }
.said.superseded { color: var(--muted); text-decoration: line-through; }
.superseded-note { font-size: .85em; color: #6b4200; margin: .2em 0 .3em; }
`;
