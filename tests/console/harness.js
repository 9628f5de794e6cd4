// What the console tests stand on: the real madeira binary on a free loopback port with a temp
// data dir, an API client to seed and check it, a loopback webhook receiver, and Debian's
// Chromium driven by playwright-core (never a downloaded browser).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const STARTUP_MS = 20000;
const CHROMIUM = '/usr/bin/chromium';
// Without the background-networking flags Chromium keeps dialing out of this closed network.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];

export const ADMIN_TOKEN = 'console-admin-token-7c41';
export const SOURCE = 'shop';
const SOURCE_SECRET = 'shop-source-secret';

const CONFIG = `
[[auth.tokens]]
name = "console-test"
token = "${ADMIN_TOKEN}"
scopes = ["admin"]

[[sources]]
id = "${SOURCE}"
secrets = ["${SOURCE_SECRET}"]

[delivery]
allow_private_targets = true
`;

export class Api {
  constructor(base, token) {
    this.base = base;
    this.token = token;
  }

  async request(method, route, body) {
    const headers = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(this.base + route, {
      method, headers,  // a string body is sent as it is
      body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null };
  }

  async ok(method, route, body) {
    const r = await this.request(method, route, body);
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${route}: ${r.status} ${r.text}`);
    return r.json;
  }

  submit(env) {
    return this.ok('POST', '/v1/tasks', { payload_version: 1, ...env }).then((r) => r.task_id);
  }

  task(id) {
    return this.ok('GET', `/v1/tasks/${encodeURIComponent(id)}`);
  }

  async leaseOne(queue, workerId) {
    const r = await this.ok('POST', '/v1/leases',
                            { worker_id: workerId, queues: [queue], max_tasks: 1, wait_ms: 0 });
    assert.equal(r.leases.length, 1, `nothing to lease on ${queue}`);
    return r.leases[0];
  }

  fail(leaseId, message, retry = 'auto') {
    return this.ok('POST', `/v1/leases/${leaseId}/fail`,
                   { error: { type: 'TestError', message }, retry });
  }

  ack(leaseId, result) {
    return this.ok('POST', `/v1/leases/${leaseId}/ack`, { result });
  }

  // Submits one task with max_retries 0, leases it and fails it: it is dead at once.
  async makeDead(env, message) {
    const id = await this.submit({ ...env, max_retries: 0 });
    const lease = await this.leaseOne(env.queue, 'seed-worker');
    assert.equal(lease.task.task_id, id);
    assert.equal((await this.fail(lease.lease_id, message)).status, 'dead');
    return id;
  }

  // Posts an event signed as the configured source.
  async sendEvent(event) {
    const body = JSON.stringify(event);
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', SOURCE_SECRET).update(`${ts}\n${body}`).digest('hex');
    const res = await fetch(`${this.base}/v1/events`, {
      method: 'POST', body,
      headers: {
        'Content-Type': 'application/json', 'X-Madeira-Source': SOURCE,
        'X-Madeira-Timestamp': ts, 'X-Madeira-Signature': `sha256=${sig}`,
      },
    });
    assert.equal(res.status, 202, await res.text());
  }
}

// Polls `probe` until it returns something truthy; fails after `ms` naming `what` (a string, or
// a function giving one, so the message can show the last state seen).
export async function until(what, probe, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) {
      assert.fail(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// With `config` null the server has no tokens (auth off, loopback only).
export async function startServer(dir, config = CONFIG) {
  const bin = path.resolve(process.env.MADEIRA_BIN || path.join(REPO, 'build', 'madeira'));
  assert.ok(fs.existsSync(bin), `no madeira binary at ${bin} (set MADEIRA_BIN)`);
  fs.mkdirSync(dir, { recursive: true });
  const configFile = path.join(dir, 'madeira.toml');
  fs.writeFileSync(configFile, config ?? '');
  const stderr = fs.openSync(path.join(dir, 'stderr.log'), 'w');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MADEIRA_')));
  const proc = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 'data'),
    '--config', configFile], { stdio: ['ignore', 'pipe', stderr], env });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const early = (code) => {
      clearTimeout(timer);
      reject(new Error(`madeira exited with ${code}: ${fs.readFileSync(path.join(dir, 'stderr.log'))}`));
    };
    const timer = setTimeout(() => {
      proc.off('exit', early);
      proc.kill('SIGKILL');
      reject(new Error('madeira printed no "listening on" line'));
    }, STARTUP_MS);
    proc.once('exit', early);
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /^listening on .*:(\d+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.off('exit', early);
        resolve(Number(m[1]));
      }
    });
  });
  const base = `http://127.0.0.1:${port}`;
  return { proc, base, api: new Api(base, ADMIN_TOKEN), stop: () => proc.kill('SIGKILL') };
}

// A webhook receiver on loopback that answers every delivery 200 with a recognisable body.
export async function startReceiver(answer) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(answer);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, stop: () => server.close() };
}

export async function startBrowser(dir) {
  const profile = fs.mkdtempSync(path.join(dir, 'chromium-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
}

export function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'madeira-console-'));
}

// Waits until the locator's text matches `pattern` (bounded); returns the text.
export async function textMatches(locator, pattern, ms = 5000) {
  let last = '';
  return until(() => `${pattern} in ${locator}; its text: ${JSON.stringify(last)}`, async () => {
    last = (await locator.count()) ? await locator.first().innerText() : '';
    return pattern.test(last) ? last : null;
  }, ms);
}
