// The dead-letter panel: GET /v1/dead with its filters and paging; select tasks to replay or
// cancel them together (POST /v1/dead/replay, /v1/dead/cancel); edit one before replaying.
import { get, post, queryString } from './api.js';
import { byId, errorSummary, formValues, h, table, taskLink, time } from './dom.js';
import { attempt, showNotice } from './feedback.js';
import { Pager } from './pager.js';
import { openReplay } from './replay.js';

const selected = new Set();
let pager;

function filters() {
  const f = formValues(byId('dead-filter'));
  // datetime-local has no zone: it is the browser's local time, sent as UTC.
  const since = f.since ? new Date(f.since).toISOString() : '';
  return { queue: f.queue, task_type: f.task_type, since, limit: f.limit };
}

function updateBulk() {
  const n = selected.size;
  byId('dead-replay').disabled = n === 0;
  byId('dead-cancel').disabled = n === 0;
  byId('dead-replay').textContent = n ? `Replay selected (${n})` : 'Replay selected';
  byId('dead-cancel').textContent = n ? `Cancel selected (${n})` : 'Cancel selected';
  const boxes = [...byId('dead-list').querySelectorAll('input[data-task]')];
  const all = byId('dead-all');
  all.checked = boxes.length > 0 && boxes.every((b) => b.checked);
  all.indeterminate = !all.checked && boxes.some((b) => b.checked);
}

function checkbox(task) {
  return h('input', {
    type: 'checkbox',
    'data-task': task.task_id,
    'aria-label': `Select ${task.task_id}`,
    onchange: (e) => {
      if (e.target.checked) selected.add(task.task_id);
      else selected.delete(task.task_id);
      updateBulk();
    },
  });
}

function render(tasks) {
  const rows = tasks.map((t) => [
    checkbox(t),
    taskLink(t.task_id),
    t.queue,
    t.task_type,
    h('span', { class: 'error-text' }, errorSummary(t.last_error)),
    `${t.attempts}`,
    time(t.updated_at),
    h('button', { type: 'button', onclick: () => openReplay(t, () => pager.reload()) },
      'Edit & replay…'),
  ]);
  byId('dead-list').replaceChildren(
      table('Dead tasks',
            ['Select', 'Task', 'Queue', 'Type', 'Last error', 'Attempts', 'Dead since', 'Actions'],
            rows, 'No dead tasks match.'));
  selected.clear();
  updateBulk();
}

async function loadPage(cursor) {
  return attempt(async () => {
    const page = await get(`/v1/dead${queryString({ ...filters(), cursor })}`);
    render(page.tasks);
    return page.next_cursor ?? null;
  });
}

async function bulk(action) {
  const ids = [...selected];
  const verb = action === 'replay' ? 'Replay' : 'Cancel';
  if (!window.confirm(`${verb} ${ids.length} dead task(s)?`)) return;
  await attempt(async () => {
    const answer = await post(`/v1/dead/${action}`, { task_ids: ids });
    const n = action === 'replay' ? answer.replayed : answer.cancelled;
    showNotice(`${action === 'replay' ? 'Replayed' : 'Cancelled'} ${n} of ${ids.length} ` +
               'selected task(s).');
    await pager.reload();
  });
}

export function initDead() {
  pager = new Pager(byId('dead-pager'), 'Dead letter pages', loadPage);
  byId('dead-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    pager.first();
  });
  byId('dead-all').addEventListener('change', (e) => {
    for (const box of byId('dead-list').querySelectorAll('input[data-task]')) {
      box.checked = e.target.checked;
      if (box.checked) selected.add(box.dataset.task);
      else selected.delete(box.dataset.task);
    }
    updateBulk();
  });
  byId('dead-replay').addEventListener('click', () => bulk('replay'));
  byId('dead-cancel').addEventListener('click', () => bulk('cancel'));
  return { show: () => pager.reload() };
}
