// The edit-and-replay dialog for one dead task: payload, payload_version and max_retries, sent
// to POST /v1/tasks/{id}/replay as edits (only the fields that changed).
import { parseJson, post, segment } from './api.js';
import { byId } from './dom.js';
import { errorText, showNotice } from './feedback.js';

let current = null;  // {task, done} while the dialog is open

function fail(text) {
  const box = byId('replay-error');
  box.textContent = text;
  box.hidden = false;
}

// The edits the form asks for, or a string saying what is wrong with it.
function readEdits(task) {
  let payload;
  try {
    payload = parseJson(byId('replay-payload').value);
  } catch (e) {
    return `The payload is not valid JSON: ${e.message}`;
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload) ||
      JSON.isRawJSON?.(payload)) {
    return 'The payload must be a JSON object.';
  }
  const version = Number(byId('replay-version').value);
  const retries = Number(byId('replay-retries').value);
  if (!Number.isInteger(version) || version < 1) return 'Payload version must be an integer ≥ 1.';
  if (!Number.isInteger(retries) || retries < 0 || retries > 100) {
    return 'Max retries must be an integer from 0 to 100.';
  }
  const edits = {};
  if (JSON.stringify(payload) !== JSON.stringify(task.payload)) edits.payload = payload;
  if (version !== task.payload_version) edits.payload_version = version;
  if (retries !== task.max_retries) edits.max_retries = retries;
  return edits;
}

async function submit(event) {
  event.preventDefault();
  if (!current) return;
  const { task, done } = current;
  byId('replay-error').hidden = true;
  const edits = readEdits(task);
  if (typeof edits === 'string') return fail(edits);
  const button = byId('replay-submit');
  button.disabled = true;
  try {
    const replayed = await post(`/v1/tasks/${segment(task.task_id)}/replay`, edits);
    const changed = Object.keys(edits);
    byId('replay-dialog').close();
    showNotice(`Replayed ${task.task_id}: now ${replayed.status}` +
               (changed.length ? ` (edited ${changed.join(', ')})` : ''));
    done();
  } catch (err) {
    fail(errorText(err));  // the dialog stays open so the edit can be fixed
  } finally {
    button.disabled = false;
  }
}

export function initReplayDialog() {
  byId('replay-form').addEventListener('submit', submit);
  byId('replay-close').addEventListener('click', () => byId('replay-dialog').close());
  byId('replay-dialog').addEventListener('close', () => { current = null; });
}

// Opens the dialog for `task` (a dead task as the API returns it); `done` runs after a replay.
export function openReplay(task, done) {
  current = { task, done };
  byId('replay-task').textContent = `${task.task_id} · ${task.task_type} · queue ${task.queue}`;
  byId('replay-payload').value = JSON.stringify(task.payload, null, 2);
  byId('replay-version').value = String(task.payload_version);
  byId('replay-retries').value = String(task.max_retries);
  byId('replay-error').hidden = true;
  byId('replay-dialog').showModal();
  byId('replay-payload').focus();
}
