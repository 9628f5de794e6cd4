// No-op drain benchmark: start a server, preload N tasks with batched submits, drain them
// with one 64-slot worker, print `drained N tasks in S s = R tasks/s`.
//
//   npm run build && MADEIRA_BIN=/path/to/madeira node dist/bench/drain.js [N] [runs]
import { Producer, type TaskEnvelope, Worker } from "../src/index.js";
import { Server, randomQueue } from "../test/support.js";

const N = Number(process.argv[2] ?? 20_000);
const RUNS = Number(process.argv[3] ?? 1);
const SLOTS = 64;

async function preload(producer: Producer, queue: string): Promise<void> {
  const batches: TaskEnvelope[][] = [];
  for (let i = 0; i < N; i += 1000) {
    batches.push(
      Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({
        task_type: "bench.noop", queue, payload_version: 1, payload: { i: i + k },
      })),
    );
  }
  // A few batches in flight at once.
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) {
        const results = await producer.submitBatch(batches[next++]!);
        const refused = results.find((r) => "error" in r);
        if (refused) throw new Error(`preload refused: ${JSON.stringify(refused)}`);
      }
    }),
  );
}

async function drainOnce(server: Server): Promise<number> {
  const queue = randomQueue("bench");
  const producer = new Producer({ baseUrl: server.baseUrl });
  await preload(producer, queue);

  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((r) => (allDone = r));
  const worker = new Worker({ baseUrl: server.baseUrl, queues: [queue], slots: SLOTS, waitMs: 1000 });
  worker.handle("bench.noop", [1], () => {
    if (++done === N) allDone();
    return undefined;
  });

  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  worker.start();
  await finished;
  await worker.acks.flush();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await worker.close();

  const left = await producer.list({ queue, status: "pending", limit: 1 });
  if (left.tasks.length > 0) throw new Error("tasks left pending after the drain");
  const running = await producer.list({ queue, status: "running", limit: 1 });
  if (running.tasks.length > 0) throw new Error("tasks left running after the drain");
  console.log(`drained ${N} tasks in ${seconds.toFixed(2)} s = ${Math.round(N / seconds)} tasks/s`);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(`  (worker process CPU ${cpuMs.toFixed(0)} ms = ${((cpuMs * 1000) / N).toFixed(0)} µs/task, ${((cpuMs / 1000 / seconds) * 100).toFixed(0)}% of one core)`);
  return N / seconds;
}

const server = await Server.start();
try {
  const rates: number[] = [];
  for (let r = 0; r < RUNS; r++) rates.push(await drainOnce(server));
  if (RUNS > 1) {
    rates.sort((a, b) => a - b);
    console.log(`median of ${RUNS}: ${Math.round(rates[Math.floor(RUNS / 2)]!)} tasks/s`);
  }
} finally {
  await server.stop();
}
