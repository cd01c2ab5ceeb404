/**
 * The page's DOM and formatting helpers, plain browser JavaScript served as is (no bundler). Every value from
 * the store (run ids, names, outputs, error messages) goes into the page as text nodes, never as HTML: `el` has
 * no way to set `innerHTML`, and the only URLs it builds are `#/...` links of encoded run ids.
 */
export const domScript = String.raw`
function el(tag, attrs, children) {
  var node = document.createElement(tag);
  if (attrs) {
    Object.keys(attrs).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key === 'style') Object.assign(node.style, value);
      else node.setAttribute(key, String(value));
    });
  }
  append(node, children);
  return node;
}

function append(node, children) {
  if (children === undefined || children === null) return node;
  (Array.isArray(children) ? children : [children]).forEach(function (child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) return void append(node, child);
    node.appendChild(typeof child === 'string' || typeof child === 'number'
      ? document.createTextNode(String(child)) : child);
  });
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

function runHref(runId) {
  return '#/runs/' + encodeURIComponent(runId);
}

function runLink(runId, text) {
  return el('a', { href: runHref(runId), class: 'mono', text: text === undefined ? runId : text });
}

function badge(text, kind) {
  return el('span', { class: 'badge ' + (kind || text), text: text });
}

function fmtMs(ms) {
  if (typeof ms !== 'number' || !isFinite(ms)) return '';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  if (ms < 3600000) return (ms / 60000).toFixed(1) + ' min';
  return (ms / 3600000).toFixed(1) + ' h';
}

function fmtTime(at) {
  if (typeof at !== 'number') return '';
  var date = new Date(at);
  function pad(n, width) { return String(n).padStart(width || 2, '0'); }
  return pad(date.getHours()) + ':' + pad(date.getMinutes()) + ':' + pad(date.getSeconds()) + '.' +
    pad(date.getMilliseconds(), 3);
}

function fmtDate(at) {
  return typeof at === 'number' ? new Date(at).toLocaleString() : '';
}

function fmtAgo(at) {
  if (typeof at !== 'number') return '';
  var ms = Date.now() - at;
  return ms < 1000 ? 'just now' : fmtMs(ms) + ' ago';
}

function fmtUsage(usage) {
  if (!usage) return '';
  return usage.inputTokens + ' in / ' + usage.outputTokens + ' out tokens';
}

function fmtBytes(bytes) {
  if (typeof bytes !== 'number') return '';
  return bytes < 1024 ? bytes + ' B' : (bytes / 1024).toFixed(1) + ' KB';
}

function getJson(path) {
  return fetch(path, { headers: { Accept: 'application/json' } }).then(function (response) {
    return response.json().then(function (body) {
      if (!response.ok) {
        var error = new Error((body.error && body.error.message) || response.statusText);
        error.status = response.status;
        error.code = body.error && body.error.code;
        throw error;
      }
      return body;
    });
  });
}
`;
