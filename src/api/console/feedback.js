// The console's two message lines: the alert for the last failed call, and the status line for
// what an action did.
import { byId } from './dom.js';

export function errorText(err) {
  if (err && err.code) {
    const field = err.field ? ` (field: ${err.field})` : '';
    const status = err.status ? `${err.status} ` : '';
    return `${status}${err.code}: ${err.message}${field}`;
  }
  return String(err && err.message ? err.message : err);
}

function showError(err) {
  const box = byId('error');
  let text = errorText(err);
  if (err && err.status === 401) text += ' — enter an API token above.';
  if (err && err.status === 403) text += ' — this token lacks the scope (admin for most panels).';
  box.textContent = text;
  box.hidden = false;
}

export function clearError() {
  const box = byId('error');
  box.hidden = true;
  box.textContent = '';
}

export function showNotice(text) {
  byId('notice').textContent = text;
}

// Runs an action; a failure is shown in the alert line and the result is undefined.
export async function attempt(action) {
  clearError();
  try {
    return await action();
  } catch (err) {
    showError(err);
    return undefined;
  }
}
