// SPDX-License-Identifier: MIT
// Cluster: MindInsight's cluster step trace (/cluster/step-trace): per rank, the figures of the
// job's parallel mode as stacked bars (data-parallel: interval, FP+BP, tail; model- and
// pipeline-parallel: computation and communication alone) and as a table with every figure (a
// torch job's also its kernels' computation, communication, alone and overlapped),
// for the average or one step, filtered by pipeline stage; and MindInsight's FLOPs and
// peak-memory heatmaps (/cluster/flops, /cluster/memory): per rank a cell coloured by FLOPs over
// the largest rank's and by peak memory over capacity. Stragglers (/ranks: mean step time over the
// steps every host shipped) are outlined in red in the bars and badged in the table. Last, the
// Hosts card (cluster_hosts.js) and torch-tb-profiler's communication operators per worker:
// per host its ranks, its node's shipping lag, its clock and its stragglers.
import { getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtBytes } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';
import { communicationCards, commOpsCard } from './cluster_comm.js';
import { hostsCard } from './cluster_hosts.js';

const LABELS = {
  interval_us: 'interval', fp_bp_us: 'FP+BP', tail_us: 'tail', total_us: 'total',
  computation_us: 'computation', communication_alone_us: 'communication alone', stage_us: 'stage time',
  receive_alone_us: 'receive alone', collective_communication_alone_us: 'collective comm. alone',
  communication_us: 'communication', overlap_us: 'comm. overlapped',
};
const STACKED = {
  'data-parallel': ['interval_us', 'fp_bp_us', 'tail_us'],
  'model-parallel': ['computation_us', 'communication_alone_us'],
  'pipeline-parallel': ['computation_us', 'communication_alone_us'],
};

// A cell's colour for v in [0, 1]: light (0) to dark blue (1).
function heat(v) {
  const x = Math.max(0, Math.min(1, v));
  return `hsl(212, 70%, ${Math.round(94 - 54 * x)}%)`;
}

// One heatmap: a cell per rank, coloured by value(r) in [0, 1], labelled with text(r). The
// colours are set through the CSSOM (the dashboard's CSP allows no style attributes).
function heatmap(id, rows, value, text, tip) {
  return el('div.heatmap', { dataset: { heatmap: id } }, rows.map((r) => {
    const cell = el('div.heat-cell', { dataset: { rank: r.rank, value: value(r) }, title: tip(r) },
      el('div', null, el('b', null, `rank ${r.rank}`)), el('div', null, text(r)));
    cell.style.backgroundColor = heat(value(r));
    cell.style.color = value(r) > 0.55 ? '#fff' : '#111';
    return cell;
  }));
}

function heatCard(flops, memory) {
  const body = [];
  if (flops) {
    body.push(el('h4', null, 'FLOPs (normalised to the largest rank)'),
      heatmap('flops', flops.ranks, (r) => r.flops_norm, (r) => `${fmtNum(r.flops_norm, 4)}`,
        (r) => `FLOPs ${fmtNum(r.flops_m)} M, FLOPS ${fmtNum(r.flops_per_second_g)} G/s, utilisation ${r.flops_utilization === null ? '—' : fmtNum(r.flops_utilization)}`));
    if (flops.missing_ranks.length) body.push(note('empty', `No flops_summary for rank(s) ${flops.missing_ranks.join(', ')}.`));
  }
  if (memory) {
    body.push(el('h4', null, 'Peak memory (over capacity)'),
      heatmap('memory', memory.ranks, (r) => r.peak_ratio, (r) => `${fmtBytes(r.peak_bytes)} / ${fmtBytes(r.capacity_bytes)}`,
        (r) => `peak ${fmtBytes(r.peak_bytes)} of ${fmtBytes(r.capacity_bytes)} (${fmtNum(100 * r.peak_ratio)} %), static ${r.static_bytes === null ? '—' : fmtBytes(r.static_bytes)}`));
    if (memory.missing_ranks.length) body.push(note('empty', `No memory_usage_summary for rank(s) ${memory.missing_ranks.join(', ')}.`));
  }
  if (!body.length) body.push(note('empty', 'No rank sent a FLOPs or memory summary (MindSpore flops_summary, memory_usage_summary).'));
  return card('FLOPs and peak memory', { id: 'cluster-heat', cls: 'wide' }, ...body);
}

export async function render(ctx) {
  const step = Number(ctx.params.step) > 0 ? Number(ctx.params.step) : 0;
  const stage = Number(ctx.params.stage) > 0 ? Number(ctx.params.stage) : 0;
  const linkType = ctx.params.link_type || '';
  const go = (p) => ctx.go(ctx.hashFor('cluster', { step, stage, link_type: linkType || null, ...p }));
  const comm = [...await communicationCards(ctx, step, linkType, go), await commOpsCard(ctx)];
  const hosts = await hostsCard(ctx);
  const ranksDoc = await getOptional(jobPath(ctx.job, 'ranks'));
  const strag = new Set(ranksDoc ? ranksDoc.ranks.filter((r) => r.straggler).map((r) => r.rank) : []);
  const doc = await getOptional(jobPath(ctx.job, 'cluster/step-trace', { step: step || null, stage: stage || null }));
  const all = stage ? await getOptional(jobPath(ctx.job, 'cluster/step-trace', { step: step || null })) : doc;
  const head = doc || all;
  const stages = head ? head.stages : 1;
  const stageSel = el('select#cluster-stage', { 'aria-label': 'stage', onchange: (e) => go({ stage: Number(e.target.value) }) },
    el('option', { value: 0, selected: stage === 0 }, 'all stages'),
    ...Array.from({ length: stages }, (_, i) => el('option', { value: i + 1, selected: stage === i + 1 }, `stage ${i + 1}`)));
  const stepBox = el('input#cluster-step', { type: 'number', min: 0, value: step, 'aria-label': 'step (0: average)', onchange: (e) => go({ step: Math.max(0, Number(e.target.value) || 0) }) });
  const actions = el('span.controls', null, 'step ', stepBox, ' ', stageSel);
  const [flops, memory] = await Promise.all([getOptional(jobPath(ctx.job, 'cluster/flops')),
    getOptional(jobPath(ctx.job, 'cluster/memory'))]);
  if (!doc) {
    return el('div.page', null, card('Cluster step trace', { id: 'cluster', cls: 'wide', actions },
      note('empty', step ? `No rank${stage ? ' of this stage' : ''} has step ${step}.` : 'No rank has steps yet.')),
    heatCard(flops, memory), ...comm, hosts);
  }
  const figs = Object.keys(LABELS).filter((k) => doc.ranks.some((r) => k in r));
  const labels = doc.ranks.map((r) => (strag.has(r.rank) ? `rank ${r.rank} (straggler)` : `rank ${r.rank}`));
  const datasets = STACKED[doc.mode].map((k, i) => ({
    label: LABELS[k], data: doc.ranks.map((r) => (r[k] === null ? null : r[k] / 1000)), backgroundColor: PALETTE[i], stack: 's',
    borderColor: doc.ranks.map((r) => (strag.has(r.rank) ? '#e15759' : PALETTE[i])),
    borderWidth: doc.ranks.map((r) => (strag.has(r.rank) ? 3 : 0)),
  }));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'stage', label: 'stage', num: true },
    ...figs.map((k) => ({ key: k, label: LABELS[k], num: true, fmt: fmtUs })),
    { key: 'straggler', label: 'straggler', fmt: (v) => (v ? el('span.badge.bad', null, 'straggler') : '') },
  ];
  const rows = doc.ranks.map((r) => ({ ...r, straggler: strag.has(r.rank) }));
  const stragText = !ranksDoc ? 'Stragglers: unavailable (no /ranks answer).'
    : strag.size ? `Stragglers (Ranks page: mean step time above ${fmtUs(ranksDoc.threshold_us)}): ${[...strag].map((r) => `rank ${r}`).join(', ')}.`
      : 'No straggler (Ranks page: mean step time per rank).';
  const what = doc.step === 'average' ? `average (${doc.average_from === 'mindspore' ? "MindSpore's own average rows" : 'mean over the steps'})` : `step ${doc.step}`;
  return el('div.page', null,
    card('Cluster step trace', { id: 'cluster', cls: 'wide', actions },
      el('p.muted', { id: 'cluster-mode' }, `${doc.mode}, ${doc.stages} stage(s), ${doc.ranks.length} rank(s) shown; ${what}; last step ${doc.last_step}.`),
      el('p.muted', { id: 'cluster-stragglers', dataset: { stragglers: [...strag].join(',') } }, stragText),
      chart({
        type: 'bar',
        data: { labels, datasets },
        options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: 'ms' } } } },
      }, { id: 'cluster-bars', height: 220 }),
      dataTable({ id: 'cluster', columns, rows, csv: `job${ctx.job}-cluster-step-trace.csv`, pageSize: 64,
        state: { sort: 'rank', order: 'asc' } })),
    heatCard(flops, memory), ...comm, hosts);
}
