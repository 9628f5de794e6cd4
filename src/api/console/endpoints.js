// Webhook endpoints (GET /v1/endpoints): where deliveries go and how. Secrets appear only as
// the prefixes the API returns; the console never sees them whole.
import { get } from './api.js';
import { byId, h, table, time } from './dom.js';
import { attempt } from './feedback.js';

function rateLimit(limit) {
  if (!limit) return 'none';
  return `${limit.per_second}/s, burst ${limit.burst}`;
}

function enabled(ep) {
  if (ep.enabled) return h('span', { class: 'status status-succeeded' }, 'enabled');
  return [h('span', { class: 'status status-dead' }, 'disabled'),
    ep.disabled_reason ? h('span', { class: 'error-text' }, ` ${ep.disabled_reason}`) : null];
}

function list(items, cls) {
  if (!items || !items.length) return null;
  return h('ul', { class: 'plain' }, items.map((s) => h('li', { class: cls }, s)));
}

function render(endpoints) {
  byId('endpoints-list').replaceChildren(
      table('Webhook endpoints',
            ['Endpoint', 'URL', 'Event types', 'Sources', 'Rate limit', 'In flight', 'State',
             'Failing since', 'Secrets'],
            endpoints.map((ep) => [
              h('span', { class: 'mono' }, ep.id),
              h('span', { class: 'mono url' }, ep.url),
              list(ep.event_types, 'mono'),
              list(ep.sources, 'mono') ?? 'all',
              rateLimit(ep.rate_limit),
              `max ${ep.max_in_flight}`,
              enabled(ep),
              time(ep.failing_since),
              list(ep.secrets, 'mono secret'),
            ]), 'No endpoints yet.'));
}

export function initEndpoints() {
  const load = () => attempt(async () => render((await get('/v1/endpoints')).endpoints));
  byId('endpoints-reload').addEventListener('click', load);
  return { show: load };
}
