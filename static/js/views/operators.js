// SPDX-License-Identifier: MIT
// Operators (seed 001, Figures 3 and 4): the top 20 operator types by self time as a pie or a
// bar chart with share and time, then the table in All mode (every operator) or Type mode (per
// type; a click on a type lists its operators), with search, sort and paging; a tab with
// torch-tb-profiler's operator view (host and device time per operator, grouped by name, input
// shape or call stack; a row expands to its call stacks); and a kernels tab with its kernel view
// (per kernel, or per kernel and launching operator: tensor cores, blocks per SM, occupancy).
import { getJSON, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtPct, fmtBytes, tabs } from '../dom.js';
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
// tb-profiler's kernel view (/kernels/details): by kernel, or by kernel and launching operator
// with the launch figures that split its rows; blocks per SM and occupancy where the trace has them.
const KERNEL_GROUPS = [['name', 'Kernel'], ['operator', 'Kernel + operator']];
const dim3 = (v) => (v ? `[${v.join(', ')}]` : '—');
const kernelCols = (group, doc) => [
  { key: 'name', label: 'kernel' },
  ...(group === 'operator' ? [{ key: 'operator', label: 'operator', fmt: (v) => v ?? '—' },
    { key: 'grid', label: 'grid', fmt: dim3 }, { key: 'block', label: 'block', fmt: dim3 },
    num('registers_per_thread', 'registers/thread', (v) => (v === null ? '—' : fmtNum(v))),
    num('shared_memory', 'shared memory', (v) => (v === null ? '—' : fmtBytes(v)))] : []),
  { key: 'tensor_cores', label: 'tensor cores', fmt: (v) => (v ? 'yes' : 'no') },
  num('calls', 'calls', fmtNum), num('total_us', 'total', fmtUs), num('mean_us', 'mean', fmtUs),
  num('max_us', 'max', fmtUs), num('min_us', 'min', fmtUs),
  ...(doc.has_blocks_per_sm ? [num('blocks_per_sm', 'mean blocks/SM', (v) => fmtNum(v, 2))] : []),
  ...(doc.has_occupancy ? [num('occupancy_pct', 'mean est. occupancy %', (v) => fmtNum(v, 2))] : []),
];

// tb-profiler's operator view (/operator-view): its groups, and the columns of each.
const OPV_GROUPS = [['name', 'Operator'], ['input_shape', 'Operator + input shape'], ['stack', 'Call stack']];
const opvCols = (group, device) => [
  { key: 'name', label: 'operator' },
  ...(group === 'input_shape' ? [{ key: 'input_shape', label: 'input shape' }] : []),
  num('calls', 'calls', fmtNum),
  ...(device ? [num('device_self_us', 'device self', fmtUs), num('device_total_us', 'device total', fmtUs)] : []),
  num('host_self_us', 'host self', fmtUs), num('host_total_us', 'host total', fmtUs),
  ...(group === 'stack' ? [{ key: 'call_stack', label: 'call stack (top frame)', fmt: (v) => v.split(';')[0] }]
    : [{ key: 'has_call_stack', label: 'stack', fmt: (v) => (v ? 'yes' : '—') }]),
];

// A call stack, one frame a line (Kineto joins them with ';').
const stackList = (text) => el('ol.stack', null, text.split(';').map((f) => el('li', null, f)));

// What a row of the operator view expands to: its own stack (by call stack), else the
// drill-down of its stacks (the daemon's group_by=stack for its name, and shape).
async function opvDetail(ctx, group, device, r) {
  if (group === 'stack') return stackList(r.call_stack);
  if (!r.has_call_stack) return note('empty', 'No call stack recorded for these calls (with_stack=True records them; torch 2 writes them as python_function events, which this view does not read).');
  const q = { rank: ctx.rank, group_by: group === 'input_shape' ? 'input_shape_stack' : 'stack', name: r.name, limit: ALL_ROWS };
  if (group === 'input_shape') q.input_shape = r.input_shape;
  const doc = await getJSON(jobPath(ctx.job, 'operator-view', q));
  return el('div.stacks', null, doc.rows.map((s) => el('div.stack-row', null,
    el('p', null, `${fmtNum(s.calls)} call(s): `, device ? `device self ${fmtUs(s.device_self_us)}, ` : '',
      `host self ${fmtUs(s.host_self_us)}, host total ${fmtUs(s.host_total_us)}`),
    stackList(s.call_stack))));
}

async function opview(ctx) {
  const group = OPV_GROUPS.some(([k]) => k === ctx.params.group_by) ? ctx.params.group_by : 'name';
  const doc = await getJSON(jobPath(ctx.job, 'operator-view', { rank: ctx.rank, group_by: group, limit: ALL_ROWS }));
  const groupTabs = tabs(OPV_GROUPS, group, (g) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, tab: 'opview', group_by: g })));
  const linked = doc.device
    ? `${fmtNum(doc.device_events_linked)} of ${fmtNum(doc.device_events)} device events attributed to an operator (kernel → runtime call by correlation, runtime call → operator by External id)`
    : 'no device events: rows by host self time';
  // Operators without Kineto's cat (torch's legacy profiler: torch built without Kineto, as
  // Debian's 1.13; MindSpore) are not operators to torch-tb-profiler, so not here; say where they are.
  const others = !doc.rows.length && group !== 'stack'
    ? (await getJSON(jobPath(ctx.job, 'operators', { rank: ctx.rank, limit: 1 }))).total : 0;
  const empty = group === 'stack'
    ? 'No operator has a call stack (record with with_stack=True; torch 2 writes stacks as python_function events, which this view does not read).'
    : others
      ? `No operators (cpu_op spans) for this rank: this view reads Kineto's categories, as torch-tb-profiler does. The rank's ${fmtNum(others)} host operators were recorded without one (torch's legacy profiler, as torch built without Kineto writes them, or MindSpore): see the Operators tab and the Hierarchy page.`
      : 'No operators (cpu_op spans) for this rank.';
  return card('Operator view: host and device time per operator, as torch-tb-profiler computes it',
    { id: 'opview', cls: 'wide', actions: groupTabs },
    el('p#opview-counts.muted', null, `${fmtNum(doc.calls)} operator calls; ${linked}`
      + (doc.spans_dropped ? `; ${fmtNum(doc.spans_dropped)} spans crossing their parent left out` : '')
      + (doc.spans_cut ? `; ${fmtNum(doc.spans_cut)} spans past max_spans not read` : '') + '.'),
    dataTable({
      id: 'opview', columns: opvCols(group, doc.device), rows: doc.rows, state: tableState(ctx),
      csv: `job${ctx.job}-operator-view-${group}.csv`, empty,
      searchKeys: ['name', 'input_shape', 'call_stack'],
      onState: (s) => ctx.set({ ...ctx.params, ...s }),
      expand: (r) => opvDetail(ctx, group, doc.device, r),
    }));
}

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
  const group = ctx.params.group === 'operator' ? 'operator' : 'name';
  const doc = await getJSON(jobPath(ctx.job, 'kernels/details', { rank: ctx.rank, group }));
  const groupTabs = tabs(KERNEL_GROUPS, group, (g) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, tab: 'kernels', group: g })));
  const launched = group === 'operator'
    ? `; ${fmtNum(doc.launched)} of them launched by a host operator (kernel → runtime call by correlation → the operator around the call)` : '';
  return card('Kernels, as torch-tb-profiler shows them', { id: 'kernels', cls: 'wide', actions: groupTabs },
    doc.rows.length ? el('p#kernels-summary.muted', null,
      `${fmtNum(doc.kernels)} kernel calls, ${fmtUs(doc.total_us)}; tensor cores: ${fmtPct(doc.tensor_core_pct)} of kernel time${launched}`
      + (doc.spans_cut ? `; ${fmtNum(doc.spans_cut)} spans past max_spans not read` : '') + '.')
      : note('empty', 'No device kernels (spans with a kernel role) for this rank.'),
    // no kernels: the note alone, not a second "No rows yet." under empty column heads
    doc.rows.length ? dataTable({ id: group === 'operator' ? 'kernels-by-op' : 'kernels', columns: kernelCols(group, doc), rows: doc.rows,
      state: tableState(ctx), csv: `job${ctx.job}-kernels-${group}.csv`, searchKeys: ['name', 'operator'],
      onState: (s) => ctx.set({ ...ctx.params, ...s }) }) : null);
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
  const tab = ['kernels', 'opview'].includes(ctx.params.tab) ? ctx.params.tab : 'operators';
  const bar = tabs([['operators', 'Operators'], ['opview', 'Host + device (tb-profiler)'], ['kernels', 'Kernels']], tab,
    (t) => ctx.go(ctx.hashFor('operators', { rank: ctx.rank, tab: t })));
  const body = tab === 'kernels' ? await kernels(ctx) : tab === 'opview' ? await opview(ctx) : await operators(ctx);
  return el('div.page', null, bar, body);
}
