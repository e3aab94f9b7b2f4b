// SPDX-License-Identifier: MIT
// Diff: two runs side by side (GET /api/v1/diff, docs/ANALYSIS.md "Diff of two runs"). Pick the
// base and the experiment among the daemon's jobs (base defaults to this job; both go in the URL
// as base= and exp=); the page shows each side's step time and breakdown, then every operator
// and kernel matched by name with the calls, total and self time of each side and the change,
// the added and removed ones marked. Each side may be narrowed to a range of its steps (base_steps
// and exp_steps in the URL and the request: HTA's trace diff over iterations); HTA's two charts
// of a trace diff (visualize_counts_diff, visualize_duration_diff) show the largest changes.
import { getJSON, ApiError } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtChange } from '../dom.js';
import { dataTable } from '../table.js';
import { chart, PALETTE } from '../charts.js';

const CHART_ROWS = 15;

// value is a job as the URL and /api/v1/diff take it: its decimal id, else its exact name.
function picker(id, label, jobs, value, onchange) {
  const v = String(value || '');
  const chosen = v && (jobs.find((j) => String(j.id) === v) || jobs.find((j) => j.name === v));
  return el('label', null, `${label} `, el(`select#${id}`, { 'aria-label': label, onchange },
    el('option', { value: '', selected: !chosen }, '(choose a job)'),
    jobs.map((j) => el('option', { value: String(j.id), selected: j === chosen }, `${j.name} (#${j.id})`))));
}

// A side's step range: a text box (A-B or N; empty: every step) applied on change.
function rangeBox(id, label, value, onchange) {
  return el('label', null, `${label} `, el(`input#${id}`, {
    type: 'text', value: value || '', placeholder: 'all steps', size: 9, pattern: '[0-9]+(-[0-9]+)?',
    'aria-label': label, onchange }));
}

// What a ranged side's tables were made of, in words.
function rangeText(side) {
  const r = side.steps_range;
  if (!r) return `${side.job}: the whole run (live tables).`;
  const asked = r.first === null && r.last === null ? 'every step' : `steps ${r.first ?? ''}–${r.last ?? ''}`;
  return `${side.job}: ${asked}: ${fmtNum(r.step_spans)} step span(s) found (${r.first_step}–${r.last_step}), `
    + `${fmtNum(r.spans_read)} spans read${r.spans_cut ? `, ${fmtNum(r.spans_cut)} past max_spans left out` : ''}.`;
}

// HTA's visualize_counts_diff / visualize_duration_diff: base, exp and their difference per name,
// for the operators and kernels with the largest change of total time.
function changeCharts(doc) {
  const rows = [...doc.operators, ...doc.kernels]
    .sort((x, y) => Math.abs(y.delta_total_us) - Math.abs(x.delta_total_us) || (x.name < y.name ? -1 : 1))
    .slice(0, CHART_ROWS);
  if (!rows.length) return note('empty', 'Nothing to compare.');
  const labels = rows.map((r) => (r.name.length > 40 ? `${r.name.slice(0, 39)}…` : r.name));
  const bars = (id, title, f, axis) => chart({
    type: 'bar',
    data: {
      labels,
      datasets: [
        { label: doc.base.job, data: rows.map((r) => r[`base_${f}`]), backgroundColor: PALETTE[0] },
        { label: doc.exp.job, data: rows.map((r) => r[`exp_${f}`]), backgroundColor: PALETTE[1] },
        { label: 'difference', data: rows.map((r) => r[`delta_${f}`]), backgroundColor: PALETTE[3] },
      ],
    },
    options: { indexAxis: 'y', plugins: { title: { display: true, text: title } },
      scales: { x: { title: { display: true, text: axis } }, y: { ticks: { autoSkip: false } } } },
  }, { id, height: 360 });
  return el('div', null,
    bars('diff-counts-chart', 'Calls', 'calls', 'calls'),
    bars('diff-durations-chart', 'Total time', 'total_us', 'µs'));
}

function stepRows(doc) {
  const b = doc.base;
  const e = doc.exp;
  const rows = [{ part: 'step time', base: b.step_time_us, exp: e.step_time_us }];
  for (const k of Object.keys(b.breakdown || e.breakdown || {})) {
    rows.push({ part: k.replace(/_us$/u, ''), base: b.breakdown ? b.breakdown[k] : null, exp: e.breakdown ? e.breakdown[k] : null });
  }
  rows.push({ part: 'steps', base: b.steps, exp: e.steps, count: true });
  for (const r of rows) r.delta = r.base === null || r.exp === null ? null : r.exp - r.base;
  return rows;
}

export async function render(ctx) {
  const base = ctx.params.base || ctx.job;
  const exp = ctx.params.exp || '';
  const baseSteps = ctx.params.base_steps || '';
  const expSteps = ctx.params.exp_steps || '';
  const jobs = (await getJSON('/api/v1/jobs')).jobs;
  const go = (p) => ctx.go(ctx.hashFor('diff', { ...ctx.params, base, exp, ...p }));
  const steps = (k) => (e) => {
    const v = e.target.value.trim();
    if (v && !e.target.checkValidity()) return;
    go({ [k]: v });
  };
  const pick = el('div.diff-pick', null,
    picker('diff-base', 'base', jobs, base, (e) => go({ base: e.target.value })), ' ',
    rangeBox('diff-base-steps', 'base steps', baseSteps, steps('base_steps')), ' ',
    picker('diff-exp', 'experiment', jobs, exp, (e) => go({ exp: e.target.value })), ' ',
    rangeBox('diff-exp-steps', 'experiment steps', expSteps, steps('exp_steps')));
  const page = (...body) => el('div.page', null, card('Diff of two runs', { id: 'diff-pick', cls: 'wide' }, pick, ...body));
  if (!base || !exp) return page(note('empty', 'Choose the job to compare against the base.'));
  let doc;
  try {
    const q = new URLSearchParams({ base, exp });
    if (ctx.rank !== undefined) q.set('rank', ctx.rank);
    if (baseSteps) q.set('base_steps', baseSteps);
    if (expSteps) q.set('exp_steps', expSteps);
    doc = await getJSON(`/api/v1/diff?${q}`);
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) return page(note('error', `No diff: ${e.message}`));
    throw e;
  }
  const fmtCount = (v) => fmtNum(v);
  const val = (r, v) => (r.count ? fmtCount(v) : fmtUs(v));
  const stepTable = dataTable({
    id: 'diff-steps', rows: stepRows(doc), pageSize: 32,
    columns: [
      { key: 'part', label: '' },
      { key: 'base', label: doc.base.job, num: true, fmt: (v, r) => val(r, v) },
      { key: 'exp', label: doc.exp.job, num: true, fmt: (v, r) => val(r, v) },
      { key: 'delta', label: 'change', num: true, fmt: (v, r) => fmtChange(v, (x) => val(r, x)) },
    ],
  });
  const cols = (self) => [
    { key: 'name', label: 'name' },
    { key: 'status', label: 'status', nowrap: true },
    { key: 'base_calls', label: 'base calls', num: true, fmt: fmtCount },
    { key: 'exp_calls', label: 'exp calls', num: true, fmt: fmtCount },
    { key: 'delta_calls', label: 'Δ calls', num: true, fmt: (v) => fmtChange(v, fmtCount) },
    { key: 'base_total_us', label: 'base total', num: true, fmt: fmtUs },
    { key: 'exp_total_us', label: 'exp total', num: true, fmt: fmtUs },
    { key: 'delta_total_us', label: 'Δ total', num: true, fmt: (v) => fmtChange(v, fmtUs) },
    ...(self ? [
      { key: 'base_self_us', label: 'base self', num: true, fmt: fmtUs },
      { key: 'exp_self_us', label: 'exp self', num: true, fmt: fmtUs },
      { key: 'delta_self_us', label: 'Δ self', num: true, fmt: (v) => fmtChange(v, fmtUs) },
    ] : []),
  ];
  const table = (id, rows, self) => dataTable({ id, rows, columns: cols(self), pageSize: 25,
    csv: `diff-${doc.base.job_id}-${doc.exp.job_id}-${id.replace('diff-', '')}.csv` });
  const counts = `${doc.added.operators.length} operator(s) and ${doc.added.kernels.length} kernel(s) added, `
    + `${doc.removed.operators.length} operator(s) and ${doc.removed.kernels.length} kernel(s) removed `
    + `in ${doc.exp.job} against ${doc.base.job} (matched by name).`;
  const ranged = doc.base.steps_range || doc.exp.steps_range;
  return page(
    el('p#diff-counts.muted', null, counts),
    ranged ? el('div#diff-ranges.muted', null, el('p', null, rangeText(doc.base)), el('p', null, rangeText(doc.exp))) : null,
    card('Step time and breakdown (averages per step)', { id: 'diff-steps', cls: 'wide' }, stepTable),
    card(`Largest changes (${CHART_ROWS} at most, operators and kernels)`, { id: 'diff-charts', cls: 'wide' }, changeCharts(doc)),
    card('Operators', { id: 'diff-operators', cls: 'wide' }, table('diff-operators', doc.operators, true)),
    card('Kernels', { id: 'diff-kernels', cls: 'wide' }, table('diff-kernels', doc.kernels, false)));
}
