// SPDX-License-Identifier: MIT
// Data queues (seed 001, Figures 5 and 6). Step-gap tab: the rank's verdict, its host and device
// queue sizes per step, and every queue's statistics. Data-process tab: the pipeline graph
// (sources on the left, the op feeding the device on the right) with each op's output-queue
// usage; the bottleneck is highlighted with its suggestion; a click on an op shows its queue's
// size series (average, sampling interval), its CPU and the operators on both sides of it; under
// it MindInsight's CPU view: the system's and the process's CPU series with their means, and
// the CPU of each pipeline operator.
import { getOptional, jobPath } from '../api.js';
import { el, card, note, fmtNum, fmtPct, tabs } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';
import { kpi, VERDICT_LABELS } from './overview.js';

const SVG = 'http://www.w3.org/2000/svg';
// Usage of each pipeline queue as this page saw it, per job/rank/op: the daemon keeps only the
// latest pipeline record, so the history is what live updates brought while the page was open.
const usageHistory = new Map();

function svg(tag, attrs, ...children) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
  for (const c of children) n.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  return n;
}

const pct = (u) => (u === null || u === undefined ? 'n/a' : `${Math.round(u * 100)} %`);

function stepGap(ctx, doc) {
  if (!doc || !doc.queues.length) return note('empty', 'No queue records for this rank.');
  const v = (doc.verdicts || [])[0];
  const host = doc.queues.find((q) => v && q.name === v.host_queue) || doc.queues.find((q) => q.role === 'host');
  const dev = doc.queues.find((q) => v && q.name === v.device_queue) || doc.queues.find((q) => q.role === 'device');
  const shown = [host, dev].filter(Boolean);
  const steps = [...new Set(shown.flatMap((q) => q.series.map((p) => p.step)))].sort((a, b) => a - b);
  const datasets = shown.map((q, i) => {
    const by = new Map(q.series.map((p) => [p.step, p.size]));
    return { label: `${q.name} (${q.role})`, data: steps.map((s) => by.get(s) ?? null), borderColor: PALETTE[i], backgroundColor: PALETTE[i], pointRadius: 0, stepped: true, spanGaps: true };
  });
  const cols = [
    { key: 'name', label: 'queue' }, { key: 'role', label: 'role' },
    { key: 'samples', label: 'samples', num: true, fmt: fmtNum },
    { key: 'empty', label: 'empty', num: true, fmt: fmtNum },
    { key: 'empty_ratio', label: 'empty %', num: true, fmt: (x) => fmtPct(x * 100) },
    { key: 'full_ratio', label: 'full %', num: true, fmt: (x) => fmtPct(x * 100) },
    { key: 'avg_size', label: 'avg size', num: true, fmt: fmtNum },
    { key: 'max_size', label: 'max size', num: true, fmt: fmtNum },
    { key: 'capacity', label: 'capacity', num: true, fmt: fmtNum },
  ];
  return [
    v && v.status ? el(`div.verdict.v-${v.status}`, { dataset: { verdict: v.status } }, el('strong', null, VERDICT_LABELS[v.status] || v.status), el('p', null, v.message)) : note('empty', 'No host queue: no verdict.'),
    v && v.status ? el('div.kpis', null,
      kpi('host queue empty', `${v.host_empty} / ${v.host_total}`, 'host-empty'),
      v.device_queue ? kpi('device queue empty', `${v.device_empty} / ${v.device_total}`, 'device-empty') : null,
      kpi('host empty %', fmtPct(v.host_empty_percent), 'host-empty-pct')) : null,
    shown.length ? chart({
      type: 'line', data: { labels: steps, datasets },
      options: { scales: { x: { title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true, title: { display: true, text: 'queue size' } } } },
    }, { id: 'queue-sizes' }) : null,
    dataTable({ id: 'queues', columns: cols, rows: doc.queues, csv: `job${ctx.job}-queues.csv` }),
  ];
}

function layout(ops) {
  const byId = new Map(ops.map((o) => [o.id, o]));
  const depth = new Map();
  const depthOf = (o, seen = new Set()) => {
    if (depth.has(o.id)) return depth.get(o.id);
    if (seen.has(o.id) || o.parent === -1 || !byId.has(o.parent)) return 0;
    seen.add(o.id);
    const d = depthOf(byId.get(o.parent), seen) + 1;
    depth.set(o.id, d);
    return d;
  };
  for (const o of ops) depth.set(o.id, depthOf(o));
  const maxDepth = Math.max(0, ...depth.values());
  const rows = new Map();
  const pos = new Map();
  for (const o of ops) {
    const d = depth.get(o.id);
    const r = rows.get(d) || 0;
    rows.set(d, r + 1);
    pos.set(o.id, { x: (maxDepth - d) * 210 + 10, y: r * 90 + 10 });
  }
  return { pos, width: (maxDepth + 1) * 210 + 10, height: Math.max(...rows.values(), 1) * 90 + 10 };
}

function pipelineGraph(ctx, doc, selected, onPick) {
  const { pos, width, height } = layout(doc.ops);
  const flagged = new Map((doc.bottlenecks || []).map((b) => [b.op_id, b]));
  const g = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, class: 'pipeline', role: 'img', 'aria-label': 'pipeline graph' });
  for (const o of doc.ops) {
    if (o.parent === -1 || !pos.has(o.parent)) continue;
    const a = pos.get(o.id);
    const b = pos.get(o.parent);
    g.appendChild(svg('line', { x1: a.x + 160, y1: a.y + 30, x2: b.x, y2: b.y + 30, class: 'edge' }));
    const qx = (a.x + 160 + b.x) / 2;
    const qy = (a.y + b.y) / 2 + 30;
    const q = svg('g', { class: `queue${selected === o.id ? ' selected' : ''}`, 'data-queue': o.id, tabindex: 0 },
      svg('rect', { x: qx - 22, y: qy - 11, width: 44, height: 22, rx: 4 }),
      svg('text', { x: qx, y: qy + 4, 'text-anchor': 'middle' }, pct(o.queue_usage)));
    q.addEventListener('click', () => onPick(o.id));
    g.appendChild(q);
  }
  for (const o of doc.ops) {
    const p = pos.get(o.id);
    const cls = ['op', flagged.has(o.id) ? 'bottleneck' : '', selected === o.id ? 'selected' : ''].join(' ');
    const node = svg('g', { class: cls, 'data-op': o.id, tabindex: 0 },
      svg('rect', { x: p.x, y: p.y, width: 160, height: 60, rx: 6 }),
      svg('text', { x: p.x + 80, y: p.y + 24, 'text-anchor': 'middle', class: 'op-type' }, String(o.type)),
      svg('text', { x: p.x + 80, y: p.y + 44, 'text-anchor': 'middle', class: 'op-sub' }, `#${o.id} · ${o.num_workers} workers · ${pct(o.queue_usage)}`));
    node.addEventListener('click', () => onPick(o.id));
    g.appendChild(node);
  }
  return el('div.graph-scroll', null, g);
}

function opDetail(ctx, doc, id) {
  const o = doc.ops.find((x) => x.id === id);
  if (!o) return note('info', 'Click an operator or a queue to see its queue over time and its neighbours.');
  const key = `${ctx.job}/${ctx.rank}/${o.id}`;
  const hist = usageHistory.get(key) || [];
  const name = (x) => (x ? `${x.type} #${x.id}` : '—');
  const parent = doc.ops.find((x) => x.id === o.parent);
  const kids = o.children.map((c) => doc.ops.find((x) => x.id === c)).filter(Boolean);
  const b = (doc.bottlenecks || []).find((x) => x.op_id === o.id);
  return el('div.op-detail', { dataset: { detail: o.id } },
    el('h4', null, `${o.type} #${o.id}: output queue`),
    el('dl.points', null,
      el('dt', null, 'usage'), el('dd', { dataset: { field: 'usage' } }, pct(o.queue_usage)),
      el('dt', null, 'capacity'), el('dd', null, o.queue_capacity ?? 'n/a'),
      el('dt', null, 'workers'), el('dd', null, o.num_workers),
      el('dt', null, 'input side (children)'), el('dd', { dataset: { field: 'inputs' } }, kids.length ? kids.map(name).join(', ') : 'none (a source)'),
      el('dt', null, 'output side (parent)'), el('dd', { dataset: { field: 'output' } }, parent ? name(parent) : 'none (the root)'),
      el('dt', null, 'average size'), el('dd', { dataset: { field: 'avg-size' } }, o.queue_size_avg === null ? 'n/a' : fmtNum(o.queue_size_avg)),
      el('dt', null, 'samples'), el('dd', null, fmtNum(o.queue_samples)),
      el('dt', null, 'sampling interval'), el('dd', { dataset: { field: 'interval' } }, o.sample_interval_ms === null ? 'n/a' : `${fmtNum(o.sample_interval_ms)} ms`),
      el('dt', null, 'CPU user / sys'), el('dd', { dataset: { field: 'cpu' } }, o.cpu_user_avg === null ? 'n/a' : `${fmtPct(o.cpu_user_avg)} / ${fmtPct(o.cpu_sys_avg)}`)),
    b ? el('div.verdict.v-data_process', null, el('strong', null, 'Bottleneck'), el('p', null, b.message)) : null,
    (o.queue_size || []).length ? chart({
      type: 'line',
      data: { labels: o.queue_size.map((_, i) => i + 1), datasets: [{ label: 'output queue size', data: o.queue_size, borderColor: PALETTE[0], backgroundColor: PALETTE[0], pointRadius: 0, stepped: true }] },
      options: { scales: { x: { title: { display: true, text: o.sample_interval_ms === null ? 'sample' : `sample (interval ${fmtNum(o.sample_interval_ms)} ms)` }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true, max: o.queue_capacity ?? undefined, title: { display: true, text: 'queue size' } } }, plugins: { legend: { display: false } } },
    }, { id: 'queue-size-series', height: 180 }) : null,
    (o.cpu_user || []).length ? chart({
      type: 'line',
      data: { labels: o.cpu_user.map((_, i) => i + 1), datasets: [
        { label: 'user %', data: o.cpu_user, borderColor: PALETTE[1], backgroundColor: PALETTE[1], pointRadius: 0 },
        { label: 'sys %', data: o.cpu_sys, borderColor: PALETTE[2], backgroundColor: PALETTE[2], pointRadius: 0 }] },
      options: { scales: { x: { title: { display: true, text: 'CPU sample' }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true, title: { display: true, text: '%' } } } },
    }, { id: 'op-cpu-series', height: 160 }) : null,
    (o.queue_size || []).length ? null : hist.length > 1 ? chart({
      type: 'line',
      data: { labels: hist.map((h) => new Date(h.t).toLocaleTimeString()), datasets: [{ label: 'usage %', data: hist.map((h) => (h.u === null ? null : h.u * 100)), borderColor: PALETTE[3], pointRadius: 2 }] },
      options: { scales: { y: { beginAtZero: true, max: 100 } } },
    }, { id: 'queue-usage', height: 160 }) : el('p.muted', null, 'Usage over time: the daemon keeps the latest pipeline record; this page charts each new one as it arrives.'));
}

// MindInsight's CPU view (minddata_cpu_utilization): the system's and the process's series with
// their averages, and the CPU of each pipeline operator.
const CPU_PCT = [['user', 'system user'], ['sys', 'system sys'], ['io', 'system io'], ['idle', 'system idle'],
  ['process_user', 'process user'], ['process_sys', 'process sys']];

function cpuCard(doc) {
  const c = doc.cpu;
  if (!c) return null;
  const avg = (k) => c[`${k}_avg`];
  const shown = CPU_PCT.filter(([k]) => (c[k] || []).length);
  const n = Math.max(0, ...shown.map(([k]) => c[k].length));
  const ops = doc.ops.filter((o) => o.cpu_user_avg !== null);
  return card('CPU utilisation (MindData)', { id: 'cpu', cls: 'wide' },
    el('div.kpis', null,
      ...CPU_PCT.filter(([k]) => avg(k) !== null).map(([k, label]) => kpi(`${label} (mean)`, fmtPct(avg(k)), `cpu-${k}`)),
      avg('runnable') !== null ? kpi('runnable processes (mean)', fmtNum(avg('runnable')), 'cpu-runnable') : null,
      avg('context_switch') !== null ? kpi('context switches (mean)', fmtNum(avg('context_switch')), 'cpu-context_switch') : null,
      c.processors !== null ? kpi('processors', fmtNum(c.processors), 'cpu-processors') : null),
    n ? chart({
      type: 'line',
      data: { labels: [...Array(n).keys()].map((i) => i + 1), datasets: shown.map(([k, label], i) => ({ label: `${label} %`, data: c[k], borderColor: PALETTE[i], backgroundColor: PALETTE[i], pointRadius: 0 })) },
      options: { scales: { x: { title: { display: true, text: c.sampling_interval_ms === null ? 'sample' : `sample (interval ${fmtNum(c.sampling_interval_ms)} ms)` }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true, title: { display: true, text: '%' } } } },
    }, { id: 'cpu-series', height: 220 }) : null,
    ops.length ? dataTable({ id: 'op-cpu', rows: ops, columns: [
      { key: 'id', label: 'op', num: true }, { key: 'type', label: 'type' },
      { key: 'num_workers', label: 'workers', num: true, fmt: fmtNum },
      { key: 'cpu_user_avg', label: 'user % (mean)', num: true, fmt: fmtPct },
      { key: 'cpu_sys_avg', label: 'sys % (mean)', num: true, fmt: fmtPct }] }) : null);
}

function dataProcess(ctx, doc) {
  if (!doc) return note('empty', 'No pipeline record for this rank (MindSpore\'s dataset pipeline sends one).');
  for (const o of doc.ops) {
    const key = `${ctx.job}/${ctx.rank}/${o.id}`;
    const h = usageHistory.get(key) || [];
    if (!h.length || h[h.length - 1].u !== o.queue_usage) h.push({ t: Date.now(), u: o.queue_usage });
    usageHistory.set(key, h.slice(-500));
  }
  const selected = ctx.params.op !== undefined ? Number(ctx.params.op) : null;
  const detail = el('div.detail-slot', null, opDetail(ctx, doc, selected));
  const wrap = el('div');
  const pick = (id) => ctx.go(ctx.hashFor('queues', { rank: ctx.rank, tab: 'process', op: id }));
  wrap.append(pipelineGraph(ctx, doc, selected, pick));
  const findings = doc.bottlenecks === null
    ? note('info', 'No op carries queue figures: no bottleneck analysis.')
    : doc.bottlenecks.length
      ? el('ul.findings', null, doc.bottlenecks.map((b) => el('li', { dataset: { bottleneck: b.op_id } }, el('strong', null, `${b.type} #${b.op_id}`), `: ${b.message}`)))
      : note('empty', 'No bottleneck found.');
  return [wrap, findings, detail];
}

export async function render(ctx) {
  const tab = ctx.params.tab === 'process' ? 'process' : 'gap';
  const bar = tabs([['gap', 'Step gap'], ['process', 'Data process']], tab, (t) => ctx.go(ctx.hashFor('queues', { rank: ctx.rank, tab: t })));
  // A job that never sent a pipeline record has none to ask for (the request would be a 404
  // in the browser's console).
  const skip = tab === 'process' && ctx.jobInfo && !ctx.jobInfo.pipelines;
  const doc = skip ? null : await getOptional(jobPath(ctx.job, tab === 'gap' ? 'queues' : 'pipeline', tab === 'gap' ? { rank: ctx.rank } : { rank: ctx.rank, op: ctx.params.op }));
  const body = tab === 'gap' ? stepGap(ctx, doc) : dataProcess(ctx, doc);
  return el('div.page', null, card(tab === 'gap' ? 'Step gap: data queues' : 'Data process: pipeline', { id: `queues-${tab}`, cls: 'wide', actions: bar }, body),
    tab === 'process' && doc ? cpuCard(doc) : null);
}
