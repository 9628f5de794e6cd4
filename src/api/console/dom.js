// Builds DOM nodes from data. Text always goes in as text nodes (never innerHTML), so nothing
// the API returns can become markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(el, props, children) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.setAttribute('class', value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// h('button', {type: 'button', onclick: fn}, 'Replay') -> <button type="button">Replay</button>
export function h(tag, props, ...children) {
  return fill(document.createElement(tag), props, children);
}

export function svg(tag, props, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), props, children);
}

// Replaces an element's children; like h(), takes nodes, text, nested arrays, and skips nulls.
export function put(el, ...children) {
  el.replaceChildren();
  return fill(el, {}, children);
}

export const byId = (id) => document.getElementById(id);

// "2025-09-11T04:45:00.000Z" -> a <time> reading "2025-09-11 04:45:00.000Z"; "—" when absent.
export function time(iso) {
  if (!iso) return '—';
  return h('time', { datetime: iso }, String(iso).replace('T', ' '));
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// A task's last_error or an attempt's error: {"type","message"} reads "type: message".
export function errorSummary(error) {
  if (error === null || error === undefined) return '';
  if (typeof error === 'object' && !Array.isArray(error) && 'message' in error) {
    return error.type ? `${error.type}: ${error.message}` : String(error.message);
  }
  return typeof error === 'string' ? error : JSON.stringify(error);
}

export function json(value) {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

export function status(name) {
  return h('span', { class: `status status-${name}` }, name);
}

export function taskLink(id) {
  return h('a', { href: `#task/${encodeURIComponent(id)}`, class: 'mono' }, id);
}

// <dl> from [label, value] pairs; a value may be a node or text.
export function fields(pairs) {
  return h('dl', { class: 'fields' },
           pairs.map(([label, value]) => [h('dt', {}, label), h('dd', {}, value ?? '—')]));
}

// A table from column headers and rows of cells (nodes or text); `caption` names it for screen
// readers. With no rows it is the line `empty` instead.
export function table(caption, headers, rows, empty = 'Nothing here.') {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('table', {},
           h('caption', { class: 'visually-hidden' }, caption),
           h('thead', {}, h('tr', {}, headers.map((c) => h('th', { scope: 'col' }, c)))),
           h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => h('td', {}, c))))));
}

// The values of a form's named controls, trimmed.
export function formValues(form) {
  const out = {};
  for (const [key, value] of new FormData(form)) out[key] = String(value).trim();
  return out;
}
