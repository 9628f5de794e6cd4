// The operations console (GET /ui/) in Debian's Chromium against the real binary: what an
// operator sees and does, checked through the API afterwards.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import {
  ADMIN_TOKEN, SOURCE, startBrowser, startReceiver, startServer, tempDir, textMatches, until,
} from './harness.js';

const DEAD_QUEUE = 'console-dead';
const DEPTH_QUEUE = 'console-depth';
const TRACE = 'trace-console-42';
const EVENT_ID = 'evt-console-1';
const RECEIVER_ANSWER = '{"received":"by the console test receiver"}';
const NASTY = 'db <b>down</b> <img src=x onerror="window.__injected=1">';

describe('operations console', () => {
  let dir;
  let server;
  let api;
  let receiver;
  let browser;
  let endpoint;  // the create answer, with the whole secret

  before(async () => {
    dir = tempDir();
    server = await startServer(dir);
    api = server.api;
    receiver = await startReceiver(RECEIVER_ANSWER);

    // Dead letters: dead-a to edit and replay, dead-b and dead-c to cancel, dead-d to stay.
    await api.makeDead({ task_id: 'dead-a', task_type: 'order.close', queue: DEAD_QUEUE,
                         payload: { order_id: 1, note: 'first' } }, NASTY);
    for (const id of ['dead-b', 'dead-c', 'dead-d']) {
      await api.makeDead({ task_id: id, task_type: 'order.close', queue: DEAD_QUEUE,
                           payload: { order_id: id } }, `timeout on ${id}`);
    }

    // traced-1: a fast-retried failure by worker-a, then a success by worker-b.
    await api.submit({ task_id: 'traced-1', task_type: 'order.ship', queue: 'console-trace',
                       trace_id: TRACE, max_retries: 2, payload: { order_id: 9 } });
    let lease = await api.leaseOne('console-trace', 'worker-a');
    assert.equal((await api.fail(lease.lease_id, 'lock conflict', 'fast')).status, 'pending');
    lease = await api.leaseOne('console-trace', 'worker-b');
    await api.ack(lease.lease_id, { shipped: true });
    await api.submit({ task_id: 'traced-2', task_type: 'order.ship', queue: 'console-trace-2',
                       trace_id: TRACE, payload: { order_id: 10 } });
    await api.submit({ task_id: 'untraced', task_type: 'order.ship', queue: 'console-trace-2',
                       trace_id: 'another-trace', payload: { order_id: 11 } });

    for (let i = 0; i < 3; i++) {
      await api.submit({ task_type: 'report.build', queue: DEPTH_QUEUE, payload: { n: i } });
    }

    endpoint = await api.ok('POST', '/v1/endpoints', {
      url: receiver.url, event_types: ['order.*'], rate_limit: { per_second: 7, burst: 3 },
    });
    await api.sendEvent({ event_id: EVENT_ID, event_type: 'order.paid', payload: { order_id: 7 } });
    await until('the event delivered', async () => {
      const e = await api.ok('GET', `/v1/events/${EVENT_ID}`);
      return e.deliveries.length === 1 && e.deliveries[0].status === 'succeeded';
    });

    browser = await startBrowser(dir);
  });

  after(async () => {
    await browser?.close();
    receiver?.stop();
    server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // A fresh tab (so a fresh sessionStorage) that records what would break the page for a user:
  // uncaught errors and Content-Security-Policy refusals.
  async function openConsole(hash = '', token = ADMIN_TOKEN) {
    const page = await browser.newPage();
    page.problems = [];
    page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) page.problems.push(`CSP: ${m.text()}`);
    });
    page.on('dialog', (d) => {
      page.lastDialog = d.message();
      d.accept();
    });
    await page.goto(`${server.base}/ui/${hash}`);
    if (token) {
      await page.getByLabel('API token').fill(token);
      await page.getByRole('button', { name: 'Use token' }).click();
      await textMatches(page.locator('#token-state'), /Token set/);
    }
    return page;
  }

  async function closeConsole(page) {
    assert.deepEqual(page.problems, [], 'the page ran without errors or CSP refusals');
    await page.close();
  }

  const alertBox = (page) => page.locator('#error');
  const deadRow = (page, id) => page.locator('#dead-list tbody tr', { hasText: id });

  async function showDeadQueue(page) {
    const panel = page.locator('#panel-dead');
    await panel.getByLabel('Queue').fill(DEAD_QUEUE);
    await panel.getByRole('button', { name: 'Show' }).click();
    await deadRow(page, 'dead-d').waitFor();
  }

  test('API errors are shown: no token, then a wrong one typed from the keyboard', async () => {
    const page = await openConsole('', '');
    await textMatches(alertBox(page), /^401 unauthorized: a bearer token is required/);
    await page.getByLabel('API token').focus();
    await page.keyboard.type('not-the-token');
    await page.keyboard.press('Enter');
    await textMatches(alertBox(page), /^401 unauthorized: unknown token/);
    assert.equal(await page.locator('#dead-list table').count(), 0, 'nothing listed');
    await page.getByLabel('API token').fill(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await deadRow(page, 'dead-a').waitFor();
    assert.equal(await alertBox(page).isVisible(), false, 'the error is gone once the token works');
    await closeConsole(page);
  });

  test('a server without tokens needs none: the console sends no Authorization', async () => {
    const open = await startServer(`${dir}/open`, null);
    try {
      await open.api.makeDead({ task_id: 'open-dead', task_type: 'order.close', queue: 'q',
                                payload: {} }, 'boom');
      const page = await browser.newPage();
      const sent = [];
      page.on('request', (r) => sent.push(r.headers().authorization));
      await page.goto(`${open.base}/ui/`);
      await page.locator('#dead-list tbody tr', { hasText: 'open-dead' }).waitFor();
      assert.equal(await alertBox(page).isVisible(), false);
      assert.match(await page.locator('#token-state').innerText(), /No token sent/);
      assert.deepEqual(sent.filter(Boolean), [], 'no Authorization header on any request');
      await page.close();
    } finally {
      open.stop();
    }
  });

  test('dead letters are listed with their last error, as text', async () => {
    const page = await openConsole('#dead');
    await showDeadQueue(page);
    assert.equal(await page.locator('#dead-list tbody tr').count(), 4);
    const row = deadRow(page, 'dead-a');
    assert.match(await row.innerText(), /order\.close/);
    assert.ok((await row.innerText()).includes(`TestError: ${NASTY}`), 'the error reads as sent');
    assert.equal(await page.locator('#dead-list img, #dead-list b').count(), 0, 'no markup made');
    assert.equal(await page.evaluate(() => window.__injected), undefined);
    assert.match(await deadRow(page, 'dead-b').innerText(), /TestError: timeout on dead-b/);
    await closeConsole(page);
  });

  test('editing a payload and replaying makes the task pending with the new payload', async () => {
    const page = await openConsole();
    await showDeadQueue(page);
    await deadRow(page, 'dead-a').getByRole('button', { name: 'Edit & replay…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const payload = dialog.getByLabel('Payload (a JSON object)');
    assert.deepEqual(JSON.parse(await payload.inputValue()), { order_id: 1, note: 'first' });

    await payload.fill('{"order_id": 1, "note": "fixed"');
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await textMatches(dialog.getByRole('alert'), /not valid JSON/);
    assert.equal((await api.task('dead-a')).status, 'dead', 'a bad edit sends nothing');

    await payload.fill('{"order_id": 1, "note": "fixed"}');
    await dialog.getByLabel('Max retries').fill('2');
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await textMatches(page.locator('#notice'),
                      /Replayed dead-a: now pending \(edited payload, max_retries\)/);
    await deadRow(page, 'dead-a').waitFor({ state: 'detached' });

    const task = await api.task('dead-a');
    assert.equal(task.status, 'pending');
    assert.deepEqual(task.payload, { order_id: 1, note: 'fixed' });
    assert.equal(task.max_retries, 2);
    assert.equal(task.retry_count, 0);
    await closeConsole(page);
  });

  test('an order id beyond 2^53 is shown and replayed digit for digit', async () => {
    // Sent as text: in JavaScript 12345678901234567891 is a double, 12345678901234567000 here.
    const ORDER_ID = '12345678901234567891';
    const queue = 'console-dead-big';
    const env = `{"task_id":"dead-big","task_type":"order.close","queue":"${queue}",` +
                '"payload_version":1,"max_retries":0,' +
                `"payload":{"order_id":${ORDER_ID},"note":"x"}}`;
    assert.equal((await api.request('POST', '/v1/tasks', env)).status, 202);
    const lease = await api.leaseOne(queue, 'seed-worker');
    assert.equal((await api.fail(lease.lease_id, 'order not found')).status, 'dead');

    const page = await openConsole();
    const panel = page.locator('#panel-dead');
    await panel.getByLabel('Queue').fill(queue);
    await panel.getByRole('button', { name: 'Show' }).click();
    await deadRow(page, 'dead-big').getByRole('button', { name: 'Edit & replay…' }).click();
    const dialog = page.getByRole('dialog');
    const payload = dialog.getByLabel('Payload (a JSON object)');
    assert.match(await payload.inputValue(), new RegExp(`"order_id": ${ORDER_ID},`));

    await payload.fill((await payload.inputValue()).replace('"x"', '"fixed"'));
    await dialog.getByRole('button', { name: 'Replay' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const text = (await api.request('GET', '/v1/tasks/dead-big')).text;
    assert.match(text, new RegExp(`"payload":\\{"order_id":${ORDER_ID},"note":"fixed"\\}`));
    assert.match(text, /"status":"pending"/);
    await closeConsole(page);
  });

  test('selecting two dead tasks and cancelling them cancels those two only', async () => {
    const page = await openConsole();
    await showDeadQueue(page);
    await page.getByLabel('Select dead-b').check();
    await page.getByLabel('Select dead-c').check();
    await page.getByRole('button', { name: 'Cancel selected (2)' }).click();
    await textMatches(page.locator('#notice'), /Cancelled 2 of 2 selected task\(s\)/);
    assert.equal(page.lastDialog, 'Cancel 2 dead task(s)?');
    await deadRow(page, 'dead-b').waitFor({ state: 'detached' });
    assert.equal(await deadRow(page, 'dead-c').count(), 0);
    assert.equal(await deadRow(page, 'dead-d').count(), 1);
    assert.equal((await api.task('dead-b')).status, 'cancelled');
    assert.equal((await api.task('dead-c')).status, 'cancelled');
    assert.equal((await api.task('dead-d')).status, 'dead');
    await closeConsole(page);
  });

  test('search by trace_id finds its tasks, and a task shows its attempt timeline', async () => {
    const page = await openConsole('#search');
    const form = page.locator('#search-form');
    await form.getByLabel('Trace id').fill(TRACE);
    await form.getByRole('button', { name: 'Search tasks' }).click();
    const results = page.locator('#search-results tbody tr');
    await results.first().waitFor();
    const text = await page.locator('#search-results').innerText();
    assert.equal(await results.count(), 2, text);
    assert.match(text, /traced-1/);
    assert.match(text, /traced-2/);
    assert.doesNotMatch(text, /untraced/);

    await page.getByRole('link', { name: 'traced-1' }).click();
    const attempts = page.locator('#task-timeline li');
    await attempts.nth(1).waitFor();
    assert.match(await page.locator('#task-detail .task-id').innerText(), /traced-1\s+succeeded/);
    assert.equal(await attempts.count(), 2);
    const first = await attempts.nth(0).innerText();
    assert.match(first, /Attempt 1\s+failed/);
    assert.match(first, /worker-a/);
    assert.match(first, /TestError: lock conflict/);
    const second = await attempts.nth(1).innerText();
    assert.match(second, /Attempt 2\s+succeeded/);
    assert.match(second, /worker-b/);
    assert.deepEqual(await page.locator('#task-timeline rect').evaluateAll(
        (bars) => bars.map((b) => b.getAttribute('class'))),
                     ['bar outcome-failed', 'bar outcome-succeeded']);
    assert.match(await page.locator('#task-detail').innerText(), /"shipped": true/);

    await closeConsole(page);
  });

  test('a task opened by its link leads to the other tasks of its trace', async () => {
    const page = await openConsole('#task/traced-1');
    await page.locator('#task-detail').getByRole('link', { name: TRACE }).click();
    await textMatches(page.locator('#search-results'), /traced-2/);
    assert.equal(await page.locator('#search-results tbody tr').count(), 2);
    const form = page.locator('#search-form');
    assert.equal(await form.getByLabel('Trace id').inputValue(), TRACE);
    assert.equal(await form.getByLabel('Per page').inputValue(), '50');
    await closeConsole(page);
  });

  test('an event shows its deliveries, and a delivery its HTTP status and response', async () => {
    const page = await openConsole('#search');
    const form = page.locator('#event-form');
    await form.getByLabel('Event id').fill(EVENT_ID);
    await form.getByRole('button', { name: 'Find event' }).click();
    const deliveries = page.locator('#event-result tbody tr');
    await deliveries.first().waitFor();
    const eventText = await page.locator('#event-result').innerText();
    assert.match(eventText, /order\.paid/);
    assert.match(eventText, new RegExp(SOURCE));
    assert.match(await deliveries.first().innerText(), new RegExp(`${endpoint.id}.*succeeded`, 's'));

    await deliveries.first().getByRole('link').click();
    const attempt = page.locator('#task-timeline li').first();
    await attempt.waitFor();
    const text = await attempt.innerText();
    assert.match(text, /Attempt 1\s+succeeded/);
    assert.match(text, /HTTP status\s+200/);
    assert.ok(text.includes(RECEIVER_ANSWER), text);
    await closeConsole(page);
  });

  test('the queue chart shows the depth by state and follows new work', async () => {
    const page = await openConsole('#queues');
    const bar = page.getByRole('img', { name: new RegExp(`^${DEPTH_QUEUE}: `) });
    await textMatches(page.locator('#queues-chart'), new RegExp(DEPTH_QUEUE));
    assert.equal(await bar.getAttribute('aria-label'), `${DEPTH_QUEUE}: 3 pending`);
    const row = page.locator('#queues-chart tbody tr', { hasText: DEPTH_QUEUE });
    assert.equal(await row.locator('rect.fill-pending').count(), 1);
    assert.match(await page.getByRole('img', { name: new RegExp(`^${DEAD_QUEUE}: `) })
                     .getAttribute('aria-label'), /1 dead/);

    await api.submit({ task_type: 'report.build', queue: DEPTH_QUEUE, payload: { n: 3 } });
    await api.submit({ task_type: 'report.build', queue: DEPTH_QUEUE, payload: { n: 4 } });
    await until('the chart to show 5 pending', async () =>
      (await bar.getAttribute('aria-label')) === `${DEPTH_QUEUE}: 5 pending`);
    assert.match(await page.locator('#queues-updated').innerText(), /^Updated /);
    await closeConsole(page);
  });

  test('the endpoints panel lists the endpoint with its secret as a prefix only', async () => {
    const page = await openConsole('#endpoints');
    const row = page.locator('#endpoints-list tbody tr', { hasText: endpoint.id });
    await row.waitFor();
    const text = await row.innerText();
    assert.ok(text.includes(receiver.url), text);
    assert.match(text, /order\.\*/);
    assert.match(text, /7\/s, burst 3/);
    assert.match(text, /enabled/);
    const listed = (await api.ok('GET', '/v1/endpoints')).endpoints[0].secrets[0];
    assert.ok(listed.length < endpoint.secrets[0].length, 'the API lists a prefix');
    assert.ok(text.includes(listed), text);
    assert.ok(!(await page.content()).includes(endpoint.secrets[0]), 'the whole secret is absent');
    await closeConsole(page);
  });
});
