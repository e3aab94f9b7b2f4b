// SPDX-License-Identifier: MIT
// Overview of one job and rank, in the layout of MindInsight's "Overall Performance" page
// (seed 001, Figure 1): the helper's suggestions on the left, linking to their views; on the
// right the step-trace chart (stacked interval, FP+BP, tail per step), the operator-type pie
// (top 5 + Other), the data-queue summary with its verdict and the timeline card (statistics
// and download). Each card loads on its own: one failing route does not hide the others.
import { getJSON, getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtBytes, fmtPct } from '../dom.js';
import { chart, PALETTE, colors, msAxis, typeLegend } from '../charts.js';

export const MAX_POINTS = 2000; // points per chart at most (the API downsamples)
const OVERVIEW_POINTS = 600; // the overview's step chart is a small card: 600 bars are plenty

// The helper's `view` names (docs/API.md) → dashboard views, their parameters and the link's
// words. None is the overview, where the suggestions are listed: a link must lead elsewhere.
const HELPER_VIEWS = {
  'step-trace': ['step-trace', {}, 'Step trace'],
  queues: ['queues', {}, 'Data queues'],
  pipeline: ['queues', { tab: 'process' }, 'Data process'],
  ranks: ['ranks', {}, 'Ranks'],
  timeline: ['timeline', {}, 'Timeline'],
  kernels: ['operators', { tab: 'kernels' }, 'Kernels'],
  cluster: ['cluster', {}, 'Cluster'],
  // the link a suggestion names (evidence src_rank, dst_rank): the Cluster view's link table
  'cluster-links': ['cluster', {}, 'Link table', (ev) => ({ src_rank: ev.src_rank, dst_rank: ev.dst_rank })],
};

// MindInsight's queue verdict codes (docs/ANALYSIS.md, "Verdict") in words.
export const VERDICT_LABELS = {
  data_process: 'Data processing is the bottleneck',
  data_transmission: 'Host-to-device transfer is the bottleneck',
  device_queue_warning: 'Queues keep up',
};

// One evidence entry as a person reads it: "interval_ms 1.28 > 0.5".
function evidenceText(e) {
  const v = typeof e.value === 'number' ? fmtNum(e.value, 4) : '—';
  return e.op === '=' ? `${e.name} ${v}` : `${e.name} ${v} ${e.op} ${fmtNum(e.threshold, 4)}`;
}

export function stepSeriesChart(rows, id) {
  const labels = rows.map((r) => r.step);
  const ms = (k) => rows.map((r) => (r[k] === null || r[k] === undefined ? null : r[k] / 1000));
  return chart({
    type: 'bar',
    data: {
      labels,
      datasets: [
        { label: 'interval', data: ms('interval_us'), backgroundColor: PALETTE[0], stack: 's' },
        { label: 'FP+BP', data: ms('fp_bp_us'), backgroundColor: PALETTE[1], stack: 's' },
        { label: 'tail', data: ms('tail_us'), backgroundColor: PALETTE[2], stack: 's' },
      ],
    },
    options: {
      barPercentage: 1, categoryPercentage: 0.9,
      scales: { x: { stacked: true, title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 12 } }, y: { ...msAxis('ms'), stacked: true } },
    },
  }, { id });
}

async function settle(p) {
  try {
    return { ok: true, value: await p };
  } catch (e) {
    return { ok: false, error: e };
  }
}

function failed(r) {
  return note('error', `Cannot load: ${r.error.message}`);
}

// A view's parameters taken from a suggestion's evidence ({} without a mapping).
function evidenceParams(fn, s) {
  if (!fn) return {};
  return fn(Object.fromEntries((s.evidence || []).map((e) => [e.name, e.value])));
}

function helperPanel(ctx, res) {
  if (!res.ok) return failed(res);
  if (!res.value) return note('unavailable', 'Helper unavailable.');
  const list = res.value.suggestions || [];
  if (!list.length) return note('empty', 'No suggestions: nothing the rules flag.');
  return el('ul.suggestions', null, list.map((s) => {
    const target = HELPER_VIEWS[s.view];
    return el(`li.sev-${s.severity}`, { dataset: { code: s.code } },
      el('div.sug-title', null, el('span.sev', null, s.severity), ' ', s.title),
      el('p.sug-msg', null, s.message),
      (s.evidence || []).length ? el('p.sug-evidence.muted.small', null, 'Evidence: ', s.evidence.map(evidenceText).join('; ')) : null,
      target ? el('a.sug-link', { href: ctx.hashFor(target[0], { rank: ctx.rank, ...target[1], ...evidenceParams(target[3], s) }) }, `${target[2]} →`) : null);
  }));
}

function stepCard(ctx, steps, avg) {
  const body = [];
  if (!steps.ok) body.push(failed(steps));
  else if (!steps.value.rows.length) body.push(note('empty', 'No steps yet.'));
  else {
    const a = avg.ok ? avg.value : null;
    if (a) {
      body.push(el('div.kpis', null,
        kpi('step (mean)', fmtUs(a.total_us), 'kpi-total'),
        kpi('interval', fmtUs(a.interval_us)),
        kpi('FP+BP', fmtUs(a.fp_bp_us)),
        kpi('tail', fmtUs(a.tail_us)),
        kpi('steps', fmtNum(steps.value.total), 'kpi-steps')));
    } else {
      body.push(el('div.kpis', null, kpi('steps', fmtNum(steps.value.total), 'kpi-steps')));
    }
    body.push(stepSeriesChart(steps.value.rows, 'overview-steps'));
  }
  return card('Step trace', { id: 'step-trace', cls: 'wide', actions: el('a.more', { href: ctx.hashFor('step-trace', { rank: ctx.rank }) }, 'Details →') }, body);
}

export function kpi(label, value, id) {
  return el('div.kpi', { dataset: { kpi: id || label } }, el('div.kpi-v', null, value), el('div.kpi-l', null, label));
}

function opsCard(ctx, res) {
  const body = [];
  if (!res.ok) body.push(failed(res));
  else if (!res.value.rows.length) body.push(note('empty', 'No operators yet.'));
  else {
    const rows = res.value.rows;
    body.push(chart({
      type: 'doughnut',
      data: { labels: rows.map((r) => r.name), datasets: [{ data: rows.map((r) => r.self_us / 1000), backgroundColor: colors(rows.length) }] },
      options: { plugins: { legend: { display: false } } },
    }, { id: 'overview-ops', height: 220 }));
    body.push(typeLegend(rows, 'legend-list'));
  }
  const device = res.ok && res.value.side === 'device';
  return card(device ? 'AI Core operator types (total time)' : 'Operator types (self time)', { id: 'operators', actions: el('a.more', { href: ctx.hashFor('operators', { rank: ctx.rank }) }, 'Details →') }, body);
}

function queueCard(ctx, res) {
  const body = [];
  if (!res.ok) body.push(failed(res));
  else if (!res.value || !res.value.queues.length) body.push(note('empty', 'No data-queue records for this rank.'));
  else {
    const v = (res.value.verdicts || [])[0];
    if (v && v.status) {
      body.push(el(`div.verdict.v-${v.status}`, { dataset: { verdict: v.status } }, el('strong', null, VERDICT_LABELS[v.status] || v.status), el('p', null, v.message)));
      body.push(el('div.kpis', null,
        kpi('host queue empty', `${v.host_empty} / ${v.host_total}`, 'host-empty'),
        v.device_queue ? kpi('device queue empty', `${v.device_empty} / ${v.device_total}`, 'device-empty') : null));
    } else {
      body.push(note('empty', 'No host queue: no verdict.'));
    }
    body.push(el('ul.plain', null, res.value.queues.map((q) => el('li', null, el('span.name', null, q.name), ` (${q.role}): empty ${fmtPct(q.empty_ratio * 100)} of ${q.samples} samples`))));
  }
  return card('Data queues', { id: 'queues', actions: el('a.more', { href: ctx.hashFor('queues', { rank: ctx.rank }) }, 'Details →') }, body);
}

function timelineCard(ctx) {
  const j = ctx.jobInfo;
  return card('Timeline', { id: 'timeline', actions: el('a.more', { href: ctx.hashFor('timeline', { rank: ctx.rank }) }, 'View →') },
    el('div.kpis', null,
      kpi('events', fmtNum(j.events), 'events'),
      kpi('spans', fmtNum(j.spans), 'spans'),
      kpi('ranks', fmtNum(j.ranks), 'ranks'),
      kpi('stored', fmtBytes(j.stored_bytes), 'stored')),
    j.evicted_events ? note('warn', `${fmtNum(j.evicted_events)} events were evicted by retention.`) : null,
    el('p', null, el('a.btn', { href: jobPath(ctx.job, 'timeline'), download: `${ctx.job}.trace.json`, dataset: { download: 'timeline' } }, 'Download trace'),
      ' ', el('span.muted', null, 'Chrome trace JSON: open it in ui.perfetto.dev or chrome://tracing.')));
}

export async function render(ctx) {
  const rank = ctx.rank;
  const stepsP = settle(getJSON(jobPath(ctx.job, 'steps', { rank, max_points: OVERVIEW_POINTS, limit: 100000 })));
  // The average is asked for only when there are steps: a step-less job (a MindSpore timeline,
  // a stream of spans) has none, and the request would be a 404 in the browser's console.
  const avgP = stepsP.then((s) => (s.ok && s.value.total > 0
    ? settle(getOptional(jobPath(ctx.job, 'step-trace', { rank }))) : { ok: true, value: null }));
  const [steps, avg, ops, qs, helper] = await Promise.all([
    stepsP,
    avgP,
    settle(getJSON(jobPath(ctx.job, 'operators', { rank, group: 'type', sort: 'self', top: 5, limit: 6 }))),
    settle(getOptional(jobPath(ctx.job, 'queues', { rank }))),
    settle(getOptional(jobPath(ctx.job, 'helper', { rank }))),
  ]);
  return el('div.overview', null,
    el('aside.helper', { 'aria-label': 'helper' }, el('h3', null, 'Helper'), helperPanel(ctx, helper)),
    el('div.grid', null,
      stepCard(ctx, steps, avg),
      opsCard(ctx, ops),
      queueCard(ctx, qs),
      timelineCard(ctx)));
}
