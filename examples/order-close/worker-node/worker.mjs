// Node.js worker for order.close_timeout (payload version 1).
//
// Closing an order = appending "<order_id> node <task_id> <unix_ms>" to the shared ledger
// (the stand-in for the orders database). Uses the SDK's built output straight from the
// checkout (it has no runtime dependencies): cd sdk/node && npm ci && npm run build.
//
//   MADEIRA_URL=http://127.0.0.1:8080 LEDGER=/tmp/ledger node worker.mjs
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { PermanentError, Worker } from "../../../sdk/node/dist/src/index.js";

const baseUrl = process.env.MADEIRA_URL ?? "http://127.0.0.1:8080";
const ledger = process.env.LEDGER ?? "ledger.txt";
const workMs = Number(process.env.WORK_MS ?? 100);
let closed = 0;

const worker = new Worker({
  baseUrl,
  token: process.env.MADEIRA_TOKEN,
  queues: ["orders"],
  slots: 4,
  workerId: `node-${process.pid}`,
});

worker.handle("order.close_timeout", [1], async (task, { signal }) => {
  const orderId = task.payload.order_id;
  if (!Number.isInteger(orderId)) throw new PermanentError(`bad order_id ${orderId}`);
  // the "is it still unpaid? then close it" round trip to the order database
  await sleep(workMs * (0.5 + Math.random()), undefined, { signal });
  // flag "a" = O_APPEND: one short write per line
  appendFileSync(ledger, `${orderId} node ${task.task_id} ${Date.now()}\n`, { flag: "a" });
  closed++;
  return { closed: true, order_id: orderId, by: "node" };
});

worker.start();
worker.closeOnSignals(); // SIGTERM: stop leasing, finish in-flight work, hand back the rest
console.log(`worker-node: ready (${worker.workerId})`);
process.on("exit", () => console.log(`worker-node: stopped after closing ${closed} orders`));
