// SPDX-License-Identifier: MIT
// Paddle's benchmark timer (its Perf summary, as a table and as Paddle prints it), with ips over
// the steps. A route this daemon does not serve (not in its OpenAPI document) shows
// "unavailable" without a failing request.
import { getJSON, getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { genericDoc, paddleText } from '../generic.js';

export async function render(ctx) {
  if (!(await hasRoute('/api/v1/jobs/{job}/benchmark'))) {
    return el('div.page', null, card('Benchmark', { id: 'benchmark', cls: 'wide' }, note('unavailable', 'Benchmark unavailable: this daemon has no /benchmark route.')));
  }
  const bpath = (fmt) => jobPath(ctx.job, 'benchmark', { rank: ctx.rank, format: fmt });
  const [doc, text, steps] = await Promise.all([getOptional(bpath()), paddleText(bpath('text')),
    getJSON(jobPath(ctx.job, 'steps', { rank: ctx.rank, max_points: 2000, limit: 100000 }))]);
  // ips over steps from the steps the API lists (samples per second, or steps per second).
  const rows = steps.rows.filter((r) => r.total_us > 0);
  const withSamples = rows.length && rows.every((r) => r.samples !== null && r.samples >= 0);
  const ips = rows.map((r) => (withSamples ? r.samples : 1) / (r.total_us / 1e6));
  return el('div.page', null,
    card(`ips over steps (${withSamples ? 'samples/s' : 'steps/s'})`, { id: 'benchmark-chart', cls: 'wide' },
      rows.length ? chart({
        type: 'line',
        data: { labels: rows.map((r) => r.step), datasets: [{ label: 'ips', data: ips, borderColor: PALETTE[0], backgroundColor: PALETTE[0], pointRadius: 0, borderWidth: 1.5 }] },
        options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true } } },
      }, { id: 'ips' }) : note('empty', 'No steps yet.')),
    card('Perf summary (Paddle\'s benchmark timer)', { id: 'benchmark', cls: 'wide' },
      doc ? genericDoc(doc, 'benchmark') : note('empty', 'No steps in range for the benchmark.'), text));
}
