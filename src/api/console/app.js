// The console's entry point: the token form, and the panels routed by the URL fragment
// (#dead, #search[/trace_id=…], #task/<id>, #queues, #endpoints).
import { setToken, token } from './api.js';
import { initDead } from './dead.js';
import { byId } from './dom.js';
import { initEndpoints } from './endpoints.js';
import { clearError, showNotice } from './feedback.js';
import { initQueues } from './queues.js';
import { initReplayDialog } from './replay.js';
import { initSearch } from './search.js';
import { initTask } from './task.js';

const panels = {
  dead: initDead(),
  search: initSearch(),
  task: initTask(),
  queues: initQueues(),
  endpoints: initEndpoints(),
};
const NAV_FOR = { task: 'search' };  // a task is reached from the search section's links
let current = null;

// "#task/a%2Fb" -> {name: 'task', arg: 'a%2Fb'}: each panel decodes its own argument.
function parseHash() {
  const hash = location.hash.slice(1);
  const slash = hash.indexOf('/');
  const name = slash < 0 ? hash : hash.slice(0, slash);
  const arg = slash < 0 ? '' : hash.slice(slash + 1);
  return panels[name] ? { name, arg } : { name: 'dead', arg: '' };
}

function route() {
  const { name, arg } = parseHash();
  if (current && current !== name) panels[current].hide?.();
  current = name;
  for (const id of Object.keys(panels)) byId(`panel-${id}`).hidden = id !== name;
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === `#${NAV_FOR[name] ?? name}`) {
      link.setAttribute('aria-current', 'page');
    } else {
      link.removeAttribute('aria-current');
    }
  }
  clearError();
  showNotice('');
  byId(`panel-${name}`).querySelector('h2').focus();
  panels[name].show(arg);
}

function showTokenState() {
  byId('token-state').textContent = token() ? 'Token set for this tab.' : 'No token sent.';
}

byId('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = byId('token');
  setToken(input.value.trim());
  input.value = '';
  showTokenState();
  route();
});
byId('token-forget').addEventListener('click', () => {
  setToken('');
  showTokenState();
  route();
});

initReplayDialog();
showTokenState();
window.addEventListener('hashchange', route);
route();
