// SPDX-License-Identifier: MIT
// First render of the dashboard for a large job, in headless Chromium (docs/PERFORMANCE.md,
// "Dashboard first render"). Loads SPANS trace events with a step span every SPANS/STEPS of them
// over RANKS connections (tests/bench/loadgen, as tests/bench/api.sh does), waits until /steps
// shows every step, then opens each view ROUNDS times in a fresh page and reports, per view, the
// median time from navigation start until the view is in the page with its charts drawn, and the
// most points any chart of it draws (which must stay at or below MAX_POINTS).
// Usage: BUILD_DIR=build node tests/e2e/perf.mjs   (env SPANS, STEPS, RANKS, ROUNDS)
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const BUILD = path.resolve(ROOT, process.env.BUILD_DIR || 'build');
const SPANS = Number(process.env.SPANS || 10000000);
const STEPS = Number(process.env.STEPS || 100000);
const RANKS = Number(process.env.RANKS || 8);
const ROUNDS = Number(process.env.ROUNDS || 5);
const MAX_POINTS = 2000;
const VIEWS = (process.env.VIEWS || 'overview,step-trace,operators,queues,ranks,timeline').split(',');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stepscope-perf-'));
const sock = path.join(tmp, 'd.sock');
const daemon = spawn(path.join(BUILD, 'daemon', 'stepscoped'), ['--socket', sock, '--http', '127.0.0.1:0',
  '--data-dir', path.join(tmp, 'data'), '--log-level', 'warn', '--retention-bytes-per-job', '100000000000',
  '--static-dir', path.join(BUILD, 'static', 'static')], { stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise((resolve, reject) => {
  readline.createInterface({ input: daemon.stdout }).once('line', (l) => {
    const m = /(http:\/\/[0-9.]+:\d+)/.exec(l);
    if (m) resolve(m[1]); else reject(new Error(l));
  });
});

try {
  const t0 = Date.now();
  const load = spawnSync(path.join(BUILD, 'tests', 'bench', 'loadgen'), ['--socket', sock, '--mode', 'daemon',
    '--job', 'big', '--connections', String(RANKS), '--events', String(SPANS), '--event-bytes', '160',
    '--step-every', String(SPANS / STEPS)], { encoding: 'utf8' });
  if (load.status !== 0) throw new Error(`loadgen: ${load.stderr}`);
  for (;;) {
    const d = await (await fetch(`${base}/api/v1/jobs/big/steps?limit=1`)).json();
    if (d.total === STEPS) break;
    if (Date.now() - t0 > 600000) throw new Error(`only ${d.total} steps after 10 min`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const job = await (await fetch(`${base}/api/v1/jobs/big`)).json();
  console.log(`loaded ${job.spans} spans, ${STEPS} steps over ${RANKS} ranks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  for (const view of VIEWS) {
    const times = [];
    let maxPoints = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const page = await context.newPage();
      await page.goto(`${base}/#/job/${job.id}/${view}?rank=0`);
      // Ready: the view is in the page, not busy, and every chart it holds was created.
      for (;;) {
        const r = await page.evaluate(() => {
          const v = document.getElementById('view');
          if (!v || !v.dataset.renders || v.hasAttribute('aria-busy')) return null;
          const canvases = [...v.querySelectorAll('.chart-box canvas')];
          if (canvases.some((c) => !c.chart)) return null;
          const pts = canvases.map((c) => Math.max(...c.chart.data.datasets.map((d) => d.data.length)));
          return { t: performance.now(), points: Math.max(0, ...pts) };
        });
        if (r) {
          times.push(r.t);
          maxPoints = Math.max(maxPoints, r.points);
          break;
        }
        await new Promise((res) => setTimeout(res, 5));
      }
      await page.close();
    }
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    console.log(`view=${view} first_render_ms_median=${median.toFixed(0)} min=${times[0].toFixed(0)} max=${times[times.length - 1].toFixed(0)} max_chart_points=${maxPoints}`);
    if (maxPoints > MAX_POINTS) throw new Error(`${view}: a chart draws ${maxPoints} points`);
  }
  await browser.close();
} finally {
  daemon.kill('SIGTERM');
  await new Promise((r) => daemon.once('exit', r));
  fs.rmSync(tmp, { recursive: true, force: true });
}
