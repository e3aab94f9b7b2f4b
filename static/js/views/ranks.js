// SPDX-License-Identifier: MIT
// Ranks: a heatmap of every rank's step statistics (each column coloured from its smallest to
// its largest value), stragglers marked, and the mean step time per rank against the
// straggler threshold.
import { getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtPct, fmtChange, heat } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

const METRICS = [
  ['mean_us', 'mean'], ['median_us', 'median'], ['p90_us', 'p90'], ['min_us', 'min'], ['max_us', 'max'],
  ['std_us', 'std'], ['interval_mean_us', 'interval'], ['fp_bp_mean_us', 'FP+BP'], ['tail_mean_us', 'tail'],
];

export async function render(ctx) {
  const doc = await getOptional(jobPath(ctx.job, 'ranks'));
  if (!doc || !doc.ranks.length) return el('div.page', null, card('Ranks', { id: 'ranks', cls: 'wide' }, note('empty', 'No rank has steps yet.')));
  const range = {};
  for (const [k] of METRICS) {
    const vals = doc.ranks.map((r) => r[k]).filter((v) => v !== null && v !== undefined);
    range[k] = [Math.min(...vals), Math.max(...vals)];
  }
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'straggler', label: 'straggler', fmt: (v) => (v ? el('span.badge.bad', null, 'straggler') : '') },
    { key: 'steps', label: 'steps', num: true },
    ...METRICS.map(([key, label]) => ({
      key, label, num: true, fmt: fmtUs,
      cell: (td, r) => {
        const [lo, hi] = range[key];
        if (r[key] !== null && r[key] !== undefined && hi > lo) heat(td, (r[key] - lo) / (hi - lo));
      },
    })),
    { key: 'excess_pct', label: 'vs mean', num: true, fmt: (v) => fmtChange(v, fmtPct) },
  ];
  const colors = doc.ranks.map((r) => (r.straggler ? '#e15759' : PALETTE[0]));
  return el('div.page', null,
    card('Ranks: step time heatmap', { id: 'ranks', cls: 'wide' },
      el('p.muted', null, `Mean of rank means ${fmtUs(doc.mean_us)}; a rank above ${fmtUs(doc.threshold_us)} (+${Math.round(doc.straggler_ratio * 100)} %) is a straggler. ${doc.stragglers} straggler(s).`),
      dataTable({ id: 'ranks', columns, rows: doc.ranks, csv: `job${ctx.job}-ranks.csv`, pageSize: 64,
        state: { sort: 'rank', order: 'asc' }, onRow: (r) => ctx.go(ctx.hashFor('overview', { rank: r.rank })) })),
    card('Mean step time per rank', { id: 'ranks-chart', cls: 'wide' }, chart({
      type: 'bar',
      data: { labels: doc.ranks.map((r) => `rank ${r.rank}`), datasets: [{ label: 'mean step (ms)', data: doc.ranks.map((r) => (r.mean_us === null ? null : r.mean_us / 1000)), backgroundColor: colors }] },
      options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, title: { display: true, text: 'ms' } } } },
    }, { id: 'ranks-mean', height: 220 })));
}
