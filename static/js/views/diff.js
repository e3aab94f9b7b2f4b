// SPDX-License-Identifier: MIT
// Diff: two runs side by side (GET /api/v1/diff, docs/ANALYSIS.md "Diff of two runs"). Pick the
// base and the experiment among the daemon's jobs (base defaults to this job; both go in the URL
// as base= and exp=); the page shows each side's step time and breakdown, then every operator
// and kernel matched by name with the calls, total and self time of each side and the change,
// the added and removed ones marked.
import { getJSON, ApiError } from '../api.js';
import { el, card, note, fmtUs, fmtNum } from '../dom.js';
import { dataTable } from '../table.js';

const signed = (fmt) => (v) => (v > 0 ? `+${fmt(v)}` : fmt(v));

function picker(id, label, jobs, value, onchange) {
  return el('label', null, `${label} `, el(`select#${id}`, { 'aria-label': label, onchange },
    el('option', { value: '', selected: !value }, '(choose a job)'),
    jobs.map((j) => el('option', { value: String(j.id), selected: String(j.id) === String(value) }, `${j.name} (#${j.id})`))));
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
  const jobs = (await getJSON('/api/v1/jobs')).jobs;
  const go = (p) => ctx.go(ctx.hashFor('diff', { ...ctx.params, base, exp, ...p }));
  const pick = el('div.diff-pick', null,
    picker('diff-base', 'base', jobs, base, (e) => go({ base: e.target.value })), ' ',
    picker('diff-exp', 'experiment', jobs, exp, (e) => go({ exp: e.target.value })));
  const page = (...body) => el('div.page', null, card('Diff of two runs', { id: 'diff-pick', cls: 'wide' }, pick, ...body));
  if (!base || !exp) return page(note('empty', 'Choose the job to compare against the base.'));
  let doc;
  try {
    const q = new URLSearchParams({ base, exp });
    if (ctx.rank !== undefined) q.set('rank', ctx.rank);
    doc = await getJSON(`/api/v1/diff?${q}`);
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) return page(note('error', `No diff: ${e.message}`));
    throw e;
  }
  const fmtCount = (v) => fmtNum(v);
  const val = (r, v) => (r.count ? fmtCount(v) : fmtUs(v));
  const steps = dataTable({
    id: 'diff-steps', rows: stepRows(doc), pageSize: 32,
    columns: [
      { key: 'part', label: '' },
      { key: 'base', label: doc.base.job, num: true, fmt: (v, r) => val(r, v) },
      { key: 'exp', label: doc.exp.job, num: true, fmt: (v, r) => val(r, v) },
      { key: 'delta', label: 'change', num: true, fmt: (v, r) => (v === null ? '—' : signed((x) => val(r, x))(v)) },
    ],
  });
  const cols = (self) => [
    { key: 'name', label: 'name' },
    { key: 'status', label: 'status' },
    { key: 'base_calls', label: 'base calls', num: true, fmt: fmtCount },
    { key: 'exp_calls', label: 'exp calls', num: true, fmt: fmtCount },
    { key: 'delta_calls', label: 'Δ calls', num: true, fmt: signed(fmtCount) },
    { key: 'base_total_us', label: 'base total', num: true, fmt: fmtUs },
    { key: 'exp_total_us', label: 'exp total', num: true, fmt: fmtUs },
    { key: 'delta_total_us', label: 'Δ total', num: true, fmt: signed(fmtUs) },
    ...(self ? [
      { key: 'base_self_us', label: 'base self', num: true, fmt: fmtUs },
      { key: 'exp_self_us', label: 'exp self', num: true, fmt: fmtUs },
      { key: 'delta_self_us', label: 'Δ self', num: true, fmt: signed(fmtUs) },
    ] : []),
  ];
  const table = (id, rows, self) => dataTable({ id, rows, columns: cols(self), pageSize: 25,
    csv: `diff-${doc.base.job_id}-${doc.exp.job_id}-${id.replace('diff-', '')}.csv` });
  const counts = `${doc.added.operators.length} operator(s) and ${doc.added.kernels.length} kernel(s) added, `
    + `${doc.removed.operators.length} operator(s) and ${doc.removed.kernels.length} kernel(s) removed `
    + `in ${doc.exp.job} against ${doc.base.job} (matched by name).`;
  return page(
    el('p#diff-counts.muted', null, counts),
    card('Step time and breakdown (averages per step)', { id: 'diff-steps', cls: 'wide' }, steps),
    card('Operators', { id: 'diff-operators', cls: 'wide' }, table('diff-operators', doc.operators, true)),
    card('Kernels', { id: 'diff-kernels', cls: 'wide' }, table('diff-kernels', doc.kernels, false)));
}
