// One task: its envelope and state (GET /v1/tasks/{id}), its attempt timeline
// (GET /v1/tasks/{id}/attempts), and cancel / edit-and-replay where its state allows.
import { get, post, segment } from './api.js';
import { byId, duration, errorSummary, fields, h, json, put, status, svg, time } from './dom.js';
import { attempt, showNotice } from './feedback.js';
import { openReplay } from './replay.js';

const CANCELLABLE = new Set(['scheduled', 'pending', 'retrying', 'dead']);
const CHART_WIDTH = 640;
const ROW_HEIGHT = 22;
const LABEL_WIDTH = 40;

let shownId = null;

// A hand-typed fragment may hold a lone "%": then it is the id as typed.
function decoded(arg) {
  try {
    return decodeURIComponent(arg);
  } catch {
    return arg;
  }
}

function traceLink(traceId) {
  const href = `#search/${new URLSearchParams({ trace_id: traceId })}`;
  return h('a', { href, class: 'mono', title: 'Every task with this trace_id' }, traceId);
}

// Each attempt as a bar on one time axis, so back-off gaps between attempts show.
function timelineChart(attempts) {
  const now = Date.now();
  const spans = attempts.map((a) => {
    const start = Date.parse(a.started_at);
    const end = a.finished_at ? Date.parse(a.finished_at) : now;
    return { a, start, end };
  });
  const t0 = Math.min(...spans.map((s) => s.start));
  const t1 = Math.max(...spans.map((s) => s.end), t0 + 1);
  const scale = (CHART_WIDTH - LABEL_WIDTH - 8) / (t1 - t0);
  const height = spans.length * ROW_HEIGHT + 8;
  return svg('svg', {
    class: 'timeline-chart', viewBox: `0 0 ${CHART_WIDTH} ${height}`, role: 'img',
    'aria-label': `Attempts over time, ${duration(t1 - t0)} from the first start to the last end`,
  }, spans.map(({ a, start, end }, i) => {
    const y = i * ROW_HEIGHT + 4;
    const outcome = a.outcome ?? 'running';
    return svg('g', {},
               svg('text', { x: 0, y: y + 14, class: 'axis' }, `#${a.attempt}`),
               svg('rect', {
                 x: LABEL_WIDTH + (start - t0) * scale, y, height: ROW_HEIGHT - 6,
                 width: Math.max(2, (end - start) * scale), class: `bar outcome-${outcome}`,
               }, svg('title', {}, `Attempt ${a.attempt}: ${outcome}, ${duration(a.duration_ms)}`)));
  }));
}

function attemptItem(a) {
  const outcome = a.outcome ?? 'running';
  return h('li', { class: `attempt outcome-${outcome}` },
           h('h4', {}, `Attempt ${a.attempt} `, status(outcome)),
           fields([
             ['Worker', h('span', { class: 'mono' }, a.worker_id || '—')],
             ['Started', time(a.started_at)],
             ['Finished', time(a.finished_at)],
             ['Duration', duration(a.duration_ms)],
             ...(a.error ? [['Error', h('span', { class: 'error-text' }, errorSummary(a.error))]]
                         : []),
             ...(a.http_status !== undefined ? [['HTTP status', String(a.http_status)]] : []),
           ]),
           a.response_excerpt !== undefined
             ? [h('p', { class: 'label' }, 'Response excerpt'),
               h('pre', { class: 'excerpt' }, a.response_excerpt)]
             : null);
}

function timeline(attempts) {
  if (!attempts.length) return h('p', { class: 'empty' }, 'No attempts yet.');
  return [timelineChart(attempts), h('ol', { class: 'timeline' }, attempts.map(attemptItem))];
}

async function cancel(task) {
  if (!window.confirm(`Cancel ${task.task_id}?`)) return;
  await attempt(async () => {
    const t = await post(`/v1/tasks/${segment(task.task_id)}/cancel`);
    showNotice(`Cancelled ${task.task_id}: now ${t.status}`);
    await load(task.task_id);
  });
}

function render(task, attempts) {
  const reload = () => load(task.task_id);
  const actions = [
    h('button', { type: 'button', onclick: reload }, 'Reload'),
    task.status === 'dead'
      ? h('button', { type: 'button', onclick: () => openReplay(task, reload) }, 'Edit & replay…')
      : null,
    CANCELLABLE.has(task.status)
      ? h('button', { type: 'button', class: 'danger', onclick: () => cancel(task) }, 'Cancel task')
      : null,
  ];
  put(byId('task-detail'),
      h('p', { class: 'mono task-id' }, task.task_id, ' ', status(task.status)),
      h('div', { class: 'actions' }, actions),
      fields([
        ['Type', task.task_type],
        ['Queue', task.queue],
        ['Trace', traceLink(task.trace_id)],
        ['Payload version', String(task.payload_version)],
        ['Retries', `${task.retry_count} of ${task.max_retries}`],
        ['Attempts', String(task.attempts)],
        ['Priority', String(task.priority)],
        ['Timeout', duration(task.timeout_ms)],
        ['Scheduled for', time(task.schedule_time)],
        ['Next attempt', time(task.next_attempt_at)],
        ['Created', time(task.created_at)],
        ['Updated', time(task.updated_at)],
        ['Idempotency key', task.idempotency_key ?? '—'],
        ['Deduplicated', task.deduplicated ? 'yes' : 'no'],
      ]),
      h('h3', {}, 'Payload'), json(task.payload),
      task.last_error ? [h('h3', {}, 'Last error'), json(task.last_error)] : null,
      task.result ? [h('h3', {}, 'Result'), json(task.result)] : null,
      h('h3', {}, 'Attempt timeline'),
      h('div', { id: 'task-timeline' }, timeline(attempts)));
}

async function load(id) {
  shownId = id;
  await attempt(async () => {
    const [task, log] = await Promise.all([
      get(`/v1/tasks/${segment(id)}`),
      get(`/v1/tasks/${segment(id)}/attempts`),
    ]);
    if (shownId === id) render(task, log.attempts);
  });
}

export function initTask() {
  return {
    show: (arg) => {
      byId('task-detail').replaceChildren();
      if (arg) return load(decoded(arg));
      byId('task-detail').append(h('p', { class: 'empty' }, 'Open a task from a list or search.'));
      return undefined;
    },
  };
}
