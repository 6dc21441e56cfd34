// Drives the dashboard in headless Debian chromium (playwright-core, never a downloaded browser).
// Env: BASE_URL (the running `attribution-blueprint web`), ART_DIR (screenshots), CHROMIUM.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

const base = process.env.BASE_URL.replace(/\/$/, '');
const art = process.env.ART_DIR || '.';
const CASCADE_JOB = '418207';  // samples/xid79-nccl-watchdog-cascade
fs.mkdirSync(art, { recursive: true });

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attribution-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1440, height: 1000 },
});
const page = context.pages()[0] || await context.newPage();
const problems = [];
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) problems.push(`off-box request: ${r.url()}`); });

let step = 0;
async function shot(name) {
  await page.screenshot({ path: path.join(art, `${String(++step).padStart(2, '0')}-${name}.png`), fullPage: true });
}
async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.message}`);
    await shot(`FAILED-${name.replace(/\W+/g, '-')}`).catch(() => {});
    throw e;
  }
}
const api = async (p) => (await page.request.get(base + '/api/' + p)).json();

try {
  const all = await api('runs?limit=500');
  const runs = all.runs;
  const cascade = runs.find((r) => r.job_id === CASCADE_JOB);
  assert.ok(cascade, `the store holds job ${CASCADE_JOB}`);

  await check('runs list', async () => {
    await page.goto(base + '/#/runs');
    await page.waitForSelector('#runs-table');
    const ids = await page.$$eval('#runs-table tr.run-row', (rows) => rows.map((r) => r.dataset.job));
    assert.equal(ids.length, Math.min(50, runs.length));
    assert.ok(ids.includes(CASCADE_JOB), 'cascade job listed');
    const chips = await page.$$eval('#domain-counts .count-chip', (c) => c.map((x) => x.dataset.domain));
    assert.ok(chips.includes('gpu'), 'counts by domain include gpu');
    await shot('runs');
  });

  await check('filter by domain', async () => {
    await page.selectOption('select[name=domain]', 'gpu');
    await page.waitForFunction(() => [...document.querySelectorAll('#runs-table .badge.domain')].every((b) => b.textContent === 'gpu'));
    const domains = await page.$$eval('#runs-table .badge.domain', (b) => b.map((x) => x.textContent));
    assert.ok(domains.length > 0 && domains.length < runs.length);
    assert.equal(domains.length, runs.filter((r) => r.domain === 'gpu').length);
    assert.match(page.url(), /domain=gpu/);
    await shot('runs-filter-gpu');
  });

  await check('search by job id', async () => {
    await page.fill('input[name=q]', CASCADE_JOB);
    await page.waitForFunction((job) => {
      const rows = document.querySelectorAll('#runs-table tr.run-row');
      return rows.length === 1 && rows[0].dataset.job === job;
    }, CASCADE_JOB);
  });

  await check('click-through to the cascade verdict', async () => {
    await page.click(`#runs-table tr.run-row[data-job="${CASCADE_JOB}"] a.job`);
    await page.waitForSelector('svg.timeline');
    assert.match(page.url(), new RegExp(`#/runs/${cascade.id}$`));
    const rc = await page.textContent('#root-cause');
    assert.match(rc, /GPU has fallen off the bus/);
    assert.equal(await page.textContent('#root-cause .culprit-node'), 'gpu-a03');
    const rows = await page.$$eval('svg.timeline g.tl-row', (g) => g.map((x) => x.dataset.node));
    for (const n of ['gpu-a01', 'gpu-a02', 'gpu-a03', 'gpu-a04']) assert.ok(rows.includes(n), `timeline row ${n}`);
    const culprit = await page.$$eval('svg.timeline g.tl-row.culprit', (g) => g.map((x) => x.dataset.node));
    assert.deepEqual(culprit, ['gpu-a03']);
    assert.equal(await page.locator('svg.timeline .mark.root[data-node="gpu-a03"]').count(), 1);
    // The explained ranks on the other nodes are tied to the root mark.
    const ties = await page.$$eval('svg.timeline path.tie', (p) => p.map((x) => x.dataset.to));
    for (const n of ['gpu-a01', 'gpu-a02', 'gpu-a04']) assert.ok(ties.includes(n), `tie to ${n}`);
    assert.ok(await page.locator('svg.timeline .mark.explained[data-node="gpu-a02"]').count() > 0);
    assert.ok(await page.locator('#evidence li.root').count() > 0, 'root evidence highlighted');
    assert.match(await page.textContent('#evidence'), /NVRM: Xid \(PCI:0000:81:00\): 79/);
    assert.match(await page.textContent('#evidence'), /kernel\/dmesg-gpu-a03\.txt:18/);
    assert.ok(await page.locator('#connectors tbody tr').count() >= 5);
    const consequences = await page.textContent('#consequences');
    for (const n of ['gpu-a01', 'gpu-a02', 'gpu-a04']) assert.match(consequences, new RegExp(`${n} \\(ranks [0-9,-]+\\)[^]*victim`));
    await page.locator('#summary').screenshot({ path: path.join(art, 'summary-cascade.png') });
    await shot('verdict-cascade');
    await page.locator('#timeline').screenshot({ path: path.join(art, 'timeline-cascade.png') });
    await page.click('button[data-mode=run]');
    await page.waitForSelector('button[data-mode=run].active');
    await shot('verdict-cascade-whole-run');
  });

  await check('raw verdict JSON link', async () => {
    const href = await page.getAttribute('#raw-json', 'href');
    const res = await page.request.get(base + href);
    assert.equal(res.status(), 200);
    const v = await res.json();
    assert.equal(v.schema, 'attribution.verdict/v1');
    assert.equal(v.root_cause.node, 'gpu-a03');
  });

  await check('every verdict page renders', async () => {
    for (const r of runs) {
      await page.goto(`${base}/#/runs/${r.id}`);
      await page.waitForSelector(`.verdict-page[data-run="${r.id}"] #summary`);
      await page.waitForSelector('svg.timeline');
      const text = await page.textContent('#summary');
      assert.ok(text.includes(r.outcome), `${r.job_id}: outcome shown`);
      if (r.root_node) assert.ok(text.includes(r.root_node), `${r.job_id}: root node shown`);
      if (r.quality === 'ambiguous') { assert.ok(await page.locator('#candidates li').count() >= 2); await shot(`verdict-ambiguous-${r.job_id}`); }
      if (r.quality === 'insufficient' && r.domain !== 'none') { assert.ok(await page.locator('#missing li').count() >= 1); await shot(`verdict-insufficient-${r.job_id}`); }
    }
  });

  await check('fleet page and drill-down', async () => {
    await page.goto(base + '/#/fleet');
    await page.waitForSelector('#fleet-nodes');
    const counts = await page.$$eval('#fleet-nodes tr.fleet-row', (rows) => rows.map((r) => Number(r.children[2].textContent)));
    assert.ok(counts.length > 0);
    for (let i = 1; i < counts.length; i++) assert.ok(counts[i - 1] >= counts[i], 'repeat offenders first');
    const fleet = await api('fleet');
    const first = await page.$eval('#fleet-nodes tr.fleet-row', (r) => r.dataset.node);
    assert.equal(first, fleet.nodes[0].node);
    // The store's repeat offender: gpu-a03 is the culprit of the xid79 cascade sample and of the
    // test's own two bundles (tests/dashboard/bundles/: Xid 48, GSP timeout), so it leads.
    assert.equal(first, 'gpu-a03', 'the repeat offender is ranked first');
    assert.equal(fleet.nodes[0].runs, 3);
    assert.equal(fleet.nodes[0].root_cause, 3);
    await shot('fleet');
    await page.click(`#fleet-nodes tr.fleet-row[data-node="${first}"] a.node-link`);
    await page.waitForSelector('#runs-table');
    assert.equal(await page.inputValue('input[name=node]'), first);
    const n = await page.locator('#runs-table tr.run-row').count();
    assert.equal(n, fleet.nodes[0].runs);
    await shot('fleet-drilldown');
  });

  await check('no console errors, no off-box requests', async () => {
    assert.deepEqual(problems, []);
  });
} finally {
  await context.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(`screenshots in ${art}`);
