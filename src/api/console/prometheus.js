// Reads the Prometheus text exposition format (what GET /metrics answers) into samples.

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const ESCAPES = { n: '\n', '\\': '\\', '"': '"' };

// 'queue="a",state="b"' -> {queue: 'a', state: 'b'}; label values may hold escaped quotes.
function parseLabels(text) {
  const labels = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0 || text[eq + 1] !== '"') break;
    const name = text.slice(i, eq).trim();
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\' && j + 1 < text.length) value += ESCAPES[text[++j]] ?? text[j];
      else value += text[j];
    }
    labels[name] = value;
    i = text.indexOf(',', j);
    if (i < 0) break;
    i += 1;
  }
  return labels;
}

function parseValue(text) {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);  // NaN for "NaN" and anything unreadable
}

// [{name, labels, value}] for every sample line; comments and blank lines are skipped.
export function parsePrometheus(text) {
  const samples = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    samples.push({ name: m[1], labels: m[2] ? parseLabels(m[2]) : {}, value: parseValue(m[3]) });
  }
  return samples;
}

// madeira_queue_depth{queue,state} as Map(queue -> {state: count}), queues sorted by name.
export function queueDepths(samples) {
  const byQueue = new Map();
  for (const s of samples) {
    if (s.name !== 'madeira_queue_depth' || s.labels.queue === undefined) continue;
    if (!byQueue.has(s.labels.queue)) byQueue.set(s.labels.queue, {});
    byQueue.get(s.labels.queue)[s.labels.state ?? 'unknown'] = s.value;
  }
  return new Map([...byQueue].sort(([a], [b]) => a.localeCompare(b)));
}
