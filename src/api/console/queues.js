// Queue charts: madeira_queue_depth{queue,state} from GET /metrics, polled while the panel is
// open, drawn as one stacked bar a queue and a sparkline of its total.
import { getText } from './api.js';
import { byId, h, svg, table } from './dom.js';
import { errorText } from './feedback.js';
import { parsePrometheus, queueDepths } from './prometheus.js';

const POLL_MS = 3000;
const HISTORY = 40;  // samples kept per queue: two minutes at POLL_MS
const STATES = ['scheduled', 'pending', 'running', 'retrying', 'dead'];
// Ended tasks are history, not depth: left out of the bars and totals.
const ENDED = new Set(['succeeded', 'cancelled']);
const BAR_WIDTH = 240;
const SPARK_WIDTH = 120;
const CHART_HEIGHT = 18;

const history = new Map();  // queue -> [total, ...], oldest first
let timer = null;
let chains = 0;
let paused = false;
let visible = false;

function statesOf(depths) {
  const extra = new Set();
  for (const counts of depths.values()) {
    for (const s of Object.keys(counts)) if (!STATES.includes(s) && !ENDED.has(s)) extra.add(s);
  }
  return [...STATES, ...[...extra].sort()];
}

const total = (counts) =>
  Object.entries(counts).reduce((sum, [state, n]) => (ENDED.has(state) ? sum : sum + n), 0);

function bar(queue, counts, states, max) {
  let x = 0;
  const parts = states.filter((s) => counts[s] > 0).map((s) => {
    const width = (counts[s] / max) * BAR_WIDTH;
    const rect = svg('rect', { x, y: 0, width, height: CHART_HEIGHT, class: `fill-${s}` },
                     svg('title', {}, `${s}: ${counts[s]}`));
    x += width;
    return rect;
  });
  const summary = states.filter((s) => counts[s] > 0).map((s) => `${counts[s]} ${s}`);
  return svg('svg', {
    class: 'bar-chart', viewBox: `0 0 ${BAR_WIDTH} ${CHART_HEIGHT}`, width: BAR_WIDTH,
    height: CHART_HEIGHT, role: 'img',
    'aria-label': `${queue}: ${summary.length ? summary.join(', ') : 'empty'}`,
  }, svg('rect', { x: 0, y: 0, width: BAR_WIDTH, height: CHART_HEIGHT, class: 'track' }), parts);
}

function sparkline(queue, points) {
  const max = Math.max(1, ...points);
  const step = SPARK_WIDTH / (HISTORY - 1);
  const offset = (HISTORY - points.length) * step;
  const xy = points.map((v, i) => [offset + i * step, CHART_HEIGHT - 2 - (v / max) * (CHART_HEIGHT - 4)]);
  const last = xy.at(-1);
  return svg('svg', {
    class: 'sparkline', viewBox: `0 0 ${SPARK_WIDTH} ${CHART_HEIGHT}`, width: SPARK_WIDTH,
    height: CHART_HEIGHT, role: 'img',
    'aria-label': `Trend of ${queue}: total over the last ${points.length} samples, up to ${max}`,
  }, svg('polyline', { points: xy.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' '),
                       class: 'spark' }),
  last ? svg('circle', { cx: last[0].toFixed(1), cy: last[1].toFixed(1), r: 2, class: 'spark-end' })
       : null);
}

function render(depths) {
  const states = statesOf(depths);
  const max = Math.max(1, ...[...depths.values()].map(total));
  byId('queues-legend').replaceChildren(...states.map(
      (s) => h('span', { class: 'legend-item' }, h('span', { class: `swatch fill-${s}` }), s)));
  byId('queues-chart').replaceChildren(
      table('Queue depth by state', ['Queue', 'Depth', ...states, 'Total', 'Trend'],
            [...depths].map(([queue, counts]) => [
              h('span', { class: 'mono' }, queue), bar(queue, counts, states, max),
              ...states.map((s) => String(counts[s] ?? 0)),
              String(total(counts)), sparkline(queue, history.get(queue) ?? []),
            ]), 'No queues yet.'));
}

// Each show, hide or pause starts a new chain of polls and ends the one before.
async function poll(chain) {
  let text;
  try {
    text = await getText('/metrics');
  } catch (err) {
    // Shown here, not in the alert line, which belongs to the operator's last action.
    byId('queues-updated').textContent = `Cannot read /metrics: ${errorText(err)}`;
  }
  if (chain !== chains) return;
  if (text !== undefined) {
    const depths = queueDepths(parsePrometheus(text));
    for (const [queue, counts] of depths) {
      const points = history.get(queue) ?? [];
      points.push(total(counts));
      history.set(queue, points.slice(-HISTORY));
    }
    render(depths);
    byId('queues-updated').textContent = `Updated ${new Date().toLocaleTimeString()}`;
  }
  if (visible && !paused) timer = setTimeout(() => poll(chain), POLL_MS);
}

function restart() {
  chains += 1;
  clearTimeout(timer);
  timer = null;
  return visible ? poll(chains) : undefined;
}

export function initQueues() {
  const pause = byId('queues-pause');
  pause.addEventListener('click', () => {
    paused = !paused;
    pause.setAttribute('aria-pressed', String(paused));
    pause.textContent = paused ? 'Resume updates' : 'Pause updates';
    restart();
  });
  return {
    show: () => {
      visible = true;
      return restart();
    },
    hide: () => {
      visible = false;
      restart();
    },
  };
}
