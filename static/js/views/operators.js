// SPDX-License-Identifier: MIT
// Operators (seed 001, Figures 3 and 4): the top 20 operator types by self time as a pie or a
// bar chart with share and time, then the table in All mode (every operator) or Type mode (per
// type; a click on a type lists its operators), with search, sort and paging; and a kernels tab
// with the device kernel table.
import { getJSON, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtPct, tabs } from '../dom.js';
import { chart, colors as seriesColors, mountCharts, typeLegend } from '../charts.js';
import { dataTable } from '../table.js';

const ALL_ROWS = 100000;

const num = (key, label, fmt) => ({ key, label, num: true, fmt });
const OP_COLS = [
  { key: 'name', label: 'operator' }, { key: 'type', label: 'type' }, num('calls', 'calls', fmtNum),
  num('total_us', 'total', fmtUs), num('self_us', 'self', fmtUs), num('avg_us', 'avg', fmtUs),
  num('min_us', 'min', fmtUs), num('max_us', 'max', fmtUs), num('percent', 'self %', fmtPct),
];
const TYPE_COLS = [
  { key: 'name', label: 'type' }, num('calls', 'calls', fmtNum), num('total_us', 'total', fmtUs),
  num('self_us', 'self', fmtUs), num('avg_us', 'avg', fmtUs), num('percent', 'self %', fmtPct),
];
const KERNEL_COLS = [
  { key: 'name', label: 'kernel' }, num('calls', 'calls', fmtNum), num('total_us', 'total', fmtUs),
  num('avg_us', 'avg', fmtUs), num('min_us', 'min', fmtUs), num('max_us', 'max', fmtUs),
  num('percent', 'share', fmtPct),
];

function typeChart(rows, kind) {
  const labels = rows.map((r) => r.name);
  const data = rows.map((r) => r.self_us / 1000);
  const colors = seriesColors(rows.length);
  if (kind === 'bar') {
    return chart({
      type: 'bar',
      data: { labels, datasets: [{ label: 'self time (ms)', data, backgroundColor: colors }] },
      options: { indexAxis: 'y', plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, title: { display: true, text: 'ms' } }, y: { ticks: { autoSkip: false } } } },
    }, { id: 'op-types', height: 360 });
  }
  return chart({
    type: 'pie',
    data: { labels, datasets: [{ data, backgroundColor: colors }] },
    options: { plugins: { legend: { display: false } } },
  }, { id: 'op-types', height: 360 });
}

function tableState(ctx) {
  return { q: ctx.params.q || '', sort: ctx.params.sort || '', order: ctx.params.order || 'desc', page: Number(ctx.params.page || 0) };
}

async function kernels(ctx) {
  const doc = await getJSON(jobPath(ctx.job, 'kernels', { rank: ctx.rank, sort: 'total', limit: ALL_ROWS }));
  return card('Kernels', { id: 'kernels', cls: 'wide' },
    doc.rows.length ? null : note('empty', 'No device kernels (spans with a kernel role) for this rank.'),
    dataTable({ id: 'kernels', columns: KERNEL_COLS, rows: doc.rows, state: tableState(ctx), csv: `job${ctx.job}-kernels.csv`,
      onState: (s) => ctx.set({ ...ctx.params, ...s }) }));
}

async function operators(ctx) {
  const mode = ctx.params.mode === 'type' ? 'type' : 'all';
  const kind = ctx.params.chart === 'bar' ? 'bar' : 'pie';
  const type = ctx.params.type || '';
  const [top, table] = await Promise.all([
    getJSON(jobPath(ctx.job, 'operators', { rank: ctx.rank, group: 'type', sort: 'self', top: 20, limit: 21 })),
    getJSON(jobPath(ctx.job, 'operators', { rank: ctx.rank, group: mode === 'type' ? 'type' : 'name', sort: 'self', limit: ALL_ROWS })),
  ]);
  // side "device": a rank without host operators (MindSpore on Ascend) shows its device
  // operators, the AI Core table MindInsight centres on; self equals total there.
  const device = top.side === 'device';
  const chartBox = el('div.chart-slot', null, top.rows.length ? typeChart(top.rows, kind) : note('empty', 'No operators yet.'));
  const setChart = (k) => {
    ctx.set({ ...ctx.params, chart: k });
    ctx.params.chart = k;
    chartBox.replaceChildren(typeChart(top.rows, k));
    mountCharts();
    for (const b of toggle.querySelectorAll('button')) b.setAttribute('aria-selected', b.dataset.tab === k ? 'true' : 'false');
  };
  const toggle = tabs([['pie', 'Pie'], ['bar', 'Bar']], kind, setChart);
  const topList = typeLegend(top.rows, 'top-types');

  let rows = table.rows;
  if (mode === 'all' && type) rows = rows.filter((r) => r.type === type);
  const modeTabs = tabs([['all', 'All'], ['type', 'Type']], mode, (m) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, mode: m, chart: ctx.params.chart })));
  const filter = mode === 'all' && type
    ? el('p.filter', null, 'Operators of type ', el('strong.type-filter', null, type), ' ',
      el('a', { href: ctx.hashFor('operators', { rank: ctx.rank, mode: 'all' }) }, '(show all)')) : null;
  return [
    card(device ? 'Device (AI Core) operator types: top 20 by total time' : 'Operator types: top 20 by self time',
      { id: 'types', cls: 'wide', actions: toggle },
      el('div.two', null, chartBox, topList)),
    card(device ? 'Device operators' : 'Operators', { id: 'op-table', cls: 'wide', actions: modeTabs }, filter,
      dataTable({
        id: mode === 'type' ? 'op-types-table' : 'operators',
        columns: mode === 'type' ? TYPE_COLS : OP_COLS, rows, state: tableState(ctx),
        csv: `job${ctx.job}-operators-${mode}.csv`,
        onState: (s) => ctx.set({ ...ctx.params, ...s }),
        onRow: mode === 'type' ? (r) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, mode: 'all', type: r.name, chart: ctx.params.chart })) : null,
      })),
  ];
}

export async function render(ctx) {
  const tab = ctx.params.tab === 'kernels' ? 'kernels' : 'operators';
  const bar = tabs([['operators', 'Operators'], ['kernels', 'Kernels']], tab, (t) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, tab: t })));
  return el('div.page', null, bar, tab === 'kernels' ? await kernels(ctx) : await operators(ctx));
}
