// SPDX-License-Identifier: MIT
// Cluster: MindInsight's cluster step trace (/cluster/step-trace): per rank, the figures of the
// job's parallel mode as stacked bars (data-parallel: interval, FP+BP, tail; model- and
// pipeline-parallel: computation and communication alone) and as a table with every figure,
// for the average or one step, filtered by pipeline stage.
import { getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

const LABELS = {
  interval_us: 'interval', fp_bp_us: 'FP+BP', tail_us: 'tail', total_us: 'total',
  computation_us: 'computation', communication_alone_us: 'communication alone', stage_us: 'stage time',
  receive_alone_us: 'receive alone', collective_communication_alone_us: 'collective comm. alone',
};
const STACKED = {
  'data-parallel': ['interval_us', 'fp_bp_us', 'tail_us'],
  'model-parallel': ['computation_us', 'communication_alone_us'],
  'pipeline-parallel': ['computation_us', 'communication_alone_us'],
};

export async function render(ctx) {
  const step = Number(ctx.params.step) > 0 ? Number(ctx.params.step) : 0;
  const stage = Number(ctx.params.stage) > 0 ? Number(ctx.params.stage) : 0;
  const go = (p) => ctx.go(ctx.hashFor('cluster', { step, stage, ...p }));
  const doc = await getOptional(jobPath(ctx.job, 'cluster/step-trace', { step: step || null, stage: stage || null }));
  const all = stage ? await getOptional(jobPath(ctx.job, 'cluster/step-trace', { step: step || null })) : doc;
  const head = doc || all;
  const stages = head ? head.stages : 1;
  const stageSel = el('select#cluster-stage', { 'aria-label': 'stage', onchange: (e) => go({ stage: Number(e.target.value) }) },
    el('option', { value: 0, selected: stage === 0 }, 'all stages'),
    ...Array.from({ length: stages }, (_, i) => el('option', { value: i + 1, selected: stage === i + 1 }, `stage ${i + 1}`)));
  const stepBox = el('input#cluster-step', { type: 'number', min: 0, value: step, 'aria-label': 'step (0: average)', onchange: (e) => go({ step: Math.max(0, Number(e.target.value) || 0) }) });
  const actions = el('span.controls', null, 'step ', stepBox, ' ', stageSel);
  if (!doc) {
    return el('div.page', null, card('Cluster step trace', { id: 'cluster', cls: 'wide', actions },
      note('empty', step ? `No rank${stage ? ' of this stage' : ''} has step ${step}.` : 'No rank has steps yet.')));
  }
  const figs = Object.keys(LABELS).filter((k) => doc.ranks.some((r) => k in r));
  const labels = doc.ranks.map((r) => `rank ${r.rank}`);
  const datasets = STACKED[doc.mode].map((k, i) => ({
    label: LABELS[k], data: doc.ranks.map((r) => (r[k] === null ? null : r[k] / 1000)), backgroundColor: PALETTE[i], stack: 's',
  }));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'stage', label: 'stage', num: true },
    ...figs.map((k) => ({ key: k, label: LABELS[k], num: true, fmt: fmtUs })),
  ];
  const what = doc.step === 'average' ? `average (${doc.average_from === 'mindspore' ? "MindSpore's own average rows" : 'mean over the steps'})` : `step ${doc.step}`;
  return el('div.page', null,
    card('Cluster step trace', { id: 'cluster', cls: 'wide', actions },
      el('p.muted', { id: 'cluster-mode' }, `${doc.mode}, ${doc.stages} stage(s), ${doc.ranks.length} rank(s) shown; ${what}; last step ${doc.last_step}.`),
      chart({
        type: 'bar',
        data: { labels, datasets },
        options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: 'ms' } } } },
      }, { id: 'cluster-bars', height: 220 }),
      dataTable({ id: 'cluster', columns, rows: doc.ranks, csv: `job${ctx.job}-cluster-step-trace.csv`, pageSize: 64,
        state: { sort: 'rank', order: 'asc' } })));
}
