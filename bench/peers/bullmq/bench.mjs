// bullmq bench: runs Madeira's peer scenarios against BullMQ and prints one JSON line per result.
//
//   node bench.mjs --redis redis://127.0.0.1:6379/0 --scenario enqueue|tune|drain|latency|delayed
//
// Every scenario uses queue "bench", job name "bench.noop", the ≈300-byte payload of
// bench/workload.cc and BullMQ's defaults for everything that is not named in the output.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';

const QUEUE = 'bench';
const NAME = 'bench.noop';

// The same ≈300-byte JSON document bench/workload.cc sends in every Madeira task; BullMQ
// serialises job data with JSON.stringify, which gives back exactly these bytes.
const PAYLOAD = (() => {
  let p =
    '{"order_id":202509110001,"store_id":"S10086","customer":"c-000042",' +
    '"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"';
  p += 'x'.repeat(298 - p.length);
  return JSON.parse(`${p}"}`);
})();

const { values: args } = parseArgs({
  options: {
    redis: { type: 'string', default: 'redis://127.0.0.1:6379/0' },
    scenario: { type: 'string', default: '' },
    n: { type: 'string', default: '0' },
    inflight: { type: 'string', default: '64' },
    'bulk-size': { type: 'string', default: '100' },
    'bulk-inflight': { type: 'string', default: '16' },
    concurrency: { type: 'string', default: '1' },
    candidates: { type: 'string', default: '8,32,128,512' },
    rate: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '10' },
    'delay-ms': { type: 'string', default: '2000' },
    prefix: { type: 'string', default: 'c-' },
  },
});

const int = (name) => {
  const v = Number.parseInt(args[name], 10);
  if (!Number.isFinite(v) || v < 0) throw new Error(`bad --${name} ${args[name]}`);
  return v;
};

// ioredis options from a redis:// URL (BullMQ opens its own connections from these).
function connectionFrom(url) {
  const u = new URL(url);
  if (u.protocol !== 'redis:') throw new Error(`${url}: only redis:// URLs are supported`);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: Number(u.pathname.slice(1) || 0),
  };
}

const connection = connectionFrom(args.redis);

function emit(result) {
  console.log(JSON.stringify({ peer: 'bullmq', ...result }));
}

// bench/stats.cc's nearest-rank percentile of an ascending array.
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

// Runs `loops` concurrent copies of body(i) over i = 0..n-1.
async function inParallel(n, loops, body) {
  let next = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < n) await body(next++);
    }),
  );
}

function newQueue() {
  return new Queue(QUEUE, { connection });
}

// (a) n single add() calls, 64 in flight, then n more as addBulk of 100, 16 in flight.
async function runEnqueue() {
  const n = int('n') || 100_000;
  const inflight = int('inflight');
  const bulkSize = int('bulk-size');
  const bulkInflight = int('bulk-inflight');
  const queue = newQueue();
  await queue.waitUntilReady();

  let start = performance.now();
  await inParallel(n, inflight, () => queue.add(NAME, PAYLOAD));
  let seconds = (performance.now() - start) / 1000;
  emit({
    id: 'a.single',
    what: 'enqueue: 1 task per call (Queue.add)',
    unit: 'tasks/s',
    value: n / seconds,
    settings: { tasks: n, in_flight: inflight, connections: 1 },
  });

  const bulk = Array.from({ length: bulkSize }, () => ({ name: NAME, data: PAYLOAD }));
  const calls = Math.ceil(n / bulkSize);
  start = performance.now();
  await inParallel(calls, bulkInflight, () => queue.addBulk(bulk));
  seconds = (performance.now() - start) / 1000;
  emit({
    id: 'a.bulk',
    what: `enqueue: Queue.addBulk of ${bulkSize}`,
    unit: 'tasks/s',
    value: (calls * bulkSize) / seconds,
    settings: { tasks: calls * bulkSize, bulk_size: bulkSize, in_flight: bulkInflight, connections: 1 },
  });
  await queue.close();
}

// Adds n jobs with addBulk of 1000 (not timed).
async function preload(n) {
  const queue = newQueue();
  const chunk = 1000;
  await inParallel(Math.ceil(n / chunk), 4, (c) =>
    queue.addBulk(
      Array.from({ length: Math.min(chunk, n - c * chunk) }, () => ({ name: NAME, data: PAYLOAD })),
    ),
  );
  await queue.close();
}

// Starts one Worker and resolves `done` once `total` jobs have completed.
function startWorker(concurrency, total, onJob = () => {}) {
  let completed = 0;
  let finish;
  const done = new Promise((resolve) => {
    finish = resolve;
  });
  const worker = new Worker(QUEUE, async (job) => onJob(job), {
    connection,
    concurrency,
    autorun: false,
  });
  worker.on('completed', () => {
    if (++completed === total) finish(performance.now());
  });
  worker.on('failed', (job, err) => {
    console.error(`job ${job?.id} failed: ${err}`);
  });
  worker.on('error', (err) => console.error(`worker error: ${err}`));
  return { worker, done, completed: () => completed };
}

// Awaits `promise` for at most `ms`; `what()` describes it in the error (called at the timeout).
async function withTimeout(promise, ms, what) {
  const ac = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(ms, undefined, { signal: ac.signal }).then(() => {
        throw new Error(`${what()} did not finish in ${ms / 1000} s`);
      }),
    ]);
  } finally {
    ac.abort();
  }
}

// Preloads n jobs, then times one Worker with `concurrency` until all n have completed.
async function drainOnce(n, concurrency) {
  await preload(n);
  const w = startWorker(concurrency, n);
  const start = performance.now();
  w.worker.run().catch((err) => console.error(`worker run: ${err}`));
  const end = await withTimeout(w.done, 300_000, () => `drain (${w.completed()} of ${n} done so far)`);
  await w.worker.close();
  return n / ((end - start) / 1000);
}

// (b, once) tries each candidate concurrency on a smaller drain and names the fastest.
async function runTune() {
  const n = int('n') || 20_000;
  const candidates = args.candidates.split(',').map((c) => Number.parseInt(c, 10));
  let best = 0;
  let bestRate = 0;
  for (const c of candidates) {
    const rate = await drainOnce(n, c);
    emit({
      id: 'b.tune',
      what: `drain ${n} tasks, concurrency ${c}`,
      unit: 'tasks/s',
      value: rate,
      settings: { concurrency: c, tasks: n },
    });
    if (rate > bestRate) [best, bestRate] = [c, rate];
  }
  emit({
    id: 'b.best',
    what: 'best concurrency of the tried settings',
    unit: 'workers',
    value: best,
    settings: { tried: candidates, tasks: n },
  });
}

// (b) drains n preloaded jobs with one Worker.
async function runDrain() {
  const n = int('n') || 200_000;
  const concurrency = int('concurrency');
  emit({
    id: 'b.drain',
    what: 'drain preloaded no-op tasks, one worker process',
    unit: 'tasks/s',
    value: await drainOnce(n, concurrency),
    settings: { tasks: n, concurrency },
  });
}

// Wall-clock milliseconds with sub-millisecond resolution, comparable across processes.
const wallMs = () => performance.timeOrigin + performance.now();

// The worker side of (c) and (d), in its own process as in production (a Node.js process has one
// thread: a producer in the same process would take the worker's CPU). Records when each job
// `${prefix}${i}` started, tells the parent it is ready, and sends the times once all are in.
async function runWorkerChild() {
  const total = int('n');
  const prefix = args.prefix;
  const started = new Array(total).fill(0);
  const w = startWorker(int('concurrency'), total, (job) => {
    if (!job.id?.startsWith(prefix)) throw new Error(`unexpected job id ${job.id}`);
    const i = Number.parseInt(job.id.slice(prefix.length), 10);
    if (started[i] === 0) started[i] = wallMs();
  });
  w.worker.run().catch((err) => console.error(`worker run: ${err}`));
  await w.worker.waitUntilReady();
  process.send({ ready: true });
  await withTimeout(w.done, 120_000, () => `worker (${w.completed()} of ${total} handled)`);
  await w.worker.close();
  await new Promise((resolve) => process.send({ started }, resolve));
}

// Forks this script as the worker of `total` jobs named `${prefix}${i}`; resolves once it is
// ready, with `started`: a promise of the start times it will send.
async function forkWorker(total, prefix, concurrency) {
  const child = fork(fileURLToPath(import.meta.url), [
    '--scenario', 'worker', '--redis', args.redis, '--n', String(total), '--prefix', prefix,
    '--concurrency', String(concurrency),
  ]);
  const messages = [];
  let wake = () => {};
  child.on('message', (m) => {
    messages.push(m);
    wake();
  });
  const exited = new Promise((_, reject) => {
    child.on('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  exited.catch(() => {});
  const next = async () => {
    while (messages.length === 0) {
      await Promise.race([new Promise((resolve) => { wake = resolve; }), exited]);
    }
    return messages.shift();
  };
  await next(); // ready
  return { started: next().then((m) => m.started) };
}

// (c) open-loop add() at --rate for --seconds from 16 loops (as make bench does); latency =
// handler start - the moment that job's add() resolved, floored at zero.
async function runLatency() {
  const senders = 16;
  const rate = Number(args.rate);
  const secs = Number(args.seconds);
  const concurrency = int('concurrency');
  const total = Math.round(rate * secs);
  const acked = new Float64Array(total);
  const worker = await forkWorker(total, 'c-', concurrency);
  const queue = newQueue();
  await queue.waitUntilReady();

  const t0 = performance.now() + 300;
  let lastAck = t0;
  await Promise.all(
    Array.from({ length: senders }, async (_, s) => {
      for (let i = s; i < total; i += senders) {
        const wait = t0 + (i * 1000) / rate - performance.now();
        if (wait > 0) await sleep(wait);
        await queue.add(NAME, PAYLOAD, { jobId: `c-${i}` });
        acked[i] = wallMs();
        lastAck = performance.now();
      }
    }),
  );
  const started = await withTimeout(worker.started, 60_000, () => 'latency worker');
  await queue.close();

  const lat = Array.from(acked, (a, i) => Math.max(0, started[i] - a)).sort((x, y) => x - y);
  const settings = { rate, seconds: secs, senders, concurrency, worker: 'separate process' };
  const what = `enqueue acked -> handler start @${rate}/s`;
  emit({ id: 'c.p50', what: `${what} p50`, unit: 'ms', value: percentile(lat, 50), settings });
  emit({ id: 'c.p99', what: `${what} p99`, unit: 'ms', value: percentile(lat, 99), settings });
  emit({ id: 'c.max', what: `${what} max`, unit: 'ms', value: percentile(lat, 100), settings });
  emit({
    id: 'c.rate',
    what: 'enqueue rate reached (open loop)',
    unit: 'tasks/s',
    value: total / ((lastAck - t0) / 1000),
    settings,
  });
}

// (d) n jobs in 10 addBulk rounds 100 ms apart, each due --delay-ms after its round starts;
// lateness = handler start (wall clock) - due time.
async function runDelayed() {
  const rounds = 10;
  const n = int('n') || 10_000;
  const delayMs = int('delay-ms');
  const concurrency = int('concurrency');
  const dueMs = new Float64Array(n);
  const worker = await forkWorker(n, 'd-', concurrency);
  const queue = newQueue();
  await queue.waitUntilReady();

  const perRound = Math.ceil(n / rounds);
  for (let first = 0; first < n; first += perRound) {
    const roundStart = performance.now();
    const at = Date.now() + delayMs;
    const jobs = [];
    for (let i = first; i < Math.min(n, first + perRound); i++) {
      dueMs[i] = at;
      jobs.push({ name: NAME, data: PAYLOAD, opts: { jobId: `d-${i}`, delay: at - Date.now() } });
    }
    await queue.addBulk(jobs);
    const wait = roundStart + 100 - performance.now();
    if (wait > 0) await sleep(wait);
  }
  const started = await withTimeout(worker.started, delayMs + 60_000, () => 'delayed worker');
  await queue.close();

  const late = Array.from(started, (s, i) => s - dueMs[i]).sort((x, y) => x - y);
  const early = late.filter((l) => l < 0).length;
  const settings = { tasks: n, rounds, delay_ms: delayMs, concurrency, worker: 'separate process' };
  const note = early > 0 ? `${early} jobs started before their due time (min ${late[0].toFixed(1)} ms)` : undefined;
  for (const [id, p] of [['d.p50', 50], ['d.p99', 99], ['d.max', 100]]) {
    emit({ id, what: `delayed lateness ${id.slice(2)}`, unit: 'ms', value: percentile(late, p), settings, note });
  }
}

function versions() {
  const require = createRequire(import.meta.url);
  console.log(
    JSON.stringify({
      bullmq: require('bullmq/package.json').version,
      ioredis: require('ioredis/package.json').version,
      node: process.version,
    }),
  );
}

const scenarios = {
  enqueue: runEnqueue,
  tune: runTune,
  drain: runDrain,
  latency: runLatency,
  delayed: runDelayed,
  worker: runWorkerChild,
  version: versions,
};

const run = scenarios[args.scenario];
if (!run) {
  console.error(`usage: node bench.mjs --redis URL --scenario ${Object.keys(scenarios).join('|')}`);
  process.exit(2);
}
try {
  await run();
  process.exit(0);
} catch (err) {
  console.error(`bullmq bench: ${err?.stack ?? err}`);
  process.exit(1);
}
