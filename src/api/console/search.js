// Search: a task by id (opens it), tasks by trace_id, status, queue or type (GET /v1/tasks), and
// an event by id with its deliveries (GET /v1/events/{id}).
import { get, queryString, segment } from './api.js';
import { byId, fields, formValues, h, json, put, status, table, taskLink, time } from './dom.js';
import { attempt } from './feedback.js';
import { Pager } from './pager.js';

const FILTERS = ['trace_id', 'status', 'queue', 'task_type', 'limit'];
let pager;
let query = {};

function renderTasks(tasks) {
  byId('search-results').replaceChildren(
      table('Matching tasks', ['Task', 'Status', 'Queue', 'Type', 'Trace', 'Attempts', 'Updated'],
            tasks.map((t) => [
              taskLink(t.task_id), status(t.status), t.queue, t.task_type,
              h('span', { class: 'mono' }, t.trace_id), String(t.attempts), time(t.updated_at),
            ]), 'No tasks match.'));
}

async function loadPage(cursor) {
  return attempt(async () => {
    const page = await get(`/v1/tasks${queryString({ ...query, cursor })}`);
    renderTasks(page.tasks);
    return page.next_cursor ?? null;
  });
}

function renderEvent(e) {
  const deliveries = table('Deliveries', ['Endpoint', 'Delivery task', 'Status'],
                           e.deliveries.map((d) => [h('span', { class: 'mono' }, d.endpoint_id),
                                                    taskLink(d.task_id), status(d.status)]),
                           'No endpoint was subscribed to it.');
  put(byId('event-result'),
      fields([
        ['Event', h('span', { class: 'mono' }, e.event_id)],
        ['Type', e.event_type],
        ['Source', e.source],
        ['Trace', h('span', { class: 'mono' }, e.trace_id)],
        ['Received', time(e.received_at)],
        ...(e.target_uri ? [['Target URI', e.target_uri]] : []),
      ]),
      h('h3', {}, 'Payload'), json(e.payload),
      h('h3', {}, 'Deliveries'), deliveries);
}

function runSearch(params) {
  query = Object.fromEntries(FILTERS.map((k) => [k, params[k] ?? '']));
  return pager.first();
}

export function initSearch() {
  pager = new Pager(byId('search-pager'), 'Search result pages', loadPage);
  byId('task-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = formValues(e.target).task_id;
    if (id) location.hash = `#task/${encodeURIComponent(id)}`;
  });
  byId('search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    runSearch(formValues(e.target));
  });
  byId('event-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const { event_id: id, source } = formValues(e.target);
    if (!id) return;
    attempt(async () => renderEvent(await get(`/v1/events/${segment(id)}${queryString({ source })}`)));
  });
  // #search/trace_id=abc fills the form and runs it (the trace links of a task point here).
  return {
    show: (arg) => {
      if (!arg) return undefined;
      const params = Object.fromEntries(new URLSearchParams(arg));
      const form = byId('search-form');
      form.reset();
      for (const name of FILTERS) if (params[name]) form.elements[name].value = params[name];
      return runSearch(formValues(form));
    },
  };
}
