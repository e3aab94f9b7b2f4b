// SPDX-License-Identifier: MIT
// Step trace (seed 001, Figure 2): the average over the steps or one chosen step, with the
// stages as bars from their start to their finish, the FP/BP points used, charts of interval,
// FP+BP and tail over the steps (downsampled by the API to MAX_POINTS), the steps table (a click
// chooses that step) and the torch-style breakdown when the daemon has that route.
import { getBlob, getJSON, getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum, fmtPct, csvButton } from '../dom.js';
import { chart, PALETTE, msAxis } from '../charts.js';
import { dataTable } from '../table.js';
import { MAX_POINTS, kpi } from './overview.js';

const TABLE_ROWS_MAX = 2000; // the steps table holds the latest ones; the CSV (every step) button has all
const BREAKDOWN_ROWS = 500; // steps of the breakdown chart (8 stacked bars each)
const STAGE_LABEL = { interval: 'Step interval', fp_bp: 'Forward + backward', tail: 'Step tail' };

function stageBars(t) {
  const total = t.total_us || 1;
  return el('div.stages', null, t.stages.map((s, i) => {
    const bar = el(`div.stage-bar.c${i}`);
    // Position and width from the numbers (CSSOM, allowed by the CSP).
    bar.style.marginLeft = `${(100 * s.start_us) / total}%`;
    bar.style.width = `${Math.max(0.5, (100 * s.dur_us) / total)}%`;
    return el('div.stage', { dataset: { stage: s.name } },
      el('div.stage-label', null, STAGE_LABEL[s.name] || s.name),
      el('div.stage-track', null, bar),
      el('div.stage-num', null, `${fmtUs(s.dur_us)} (${fmtPct(s.percent)})`),
      el('div.stage-range.muted', null, `${fmtUs(s.start_us)} → ${fmtUs(s.start_us + s.dur_us)}`));
  }));
}

// MindInsight's all-reduce lines: one row per stream, its communication ops on the step's scale
// (the gaps between them are the empty track).
function reduceLines(t) {
  const lines = t.lines || [];
  if (!lines.length) return null;
  const total = t.total_us || 1;
  return el('div.stages.reduce-lines', null, el('h4', null, 'All-reduce / communication streams'),
    lines.map((l) => {
      const ops = l.segments.filter((g) => g && g.name);
      const track = el('div.stage-track.reduce', null, ops.map((g) => {
        const bar = el('div.stage-bar', { title: `${g.name}: ${fmtUs(g.dur_us)} at ${fmtUs(g.start_us)}`, dataset: { seg: g.name } });
        bar.style.left = `${(100 * g.start_us) / total}%`;
        bar.style.width = `${Math.max(0.3, (100 * g.dur_us) / total)}%`;
        return bar;
      }));
      const busy = ops.reduce((a, g) => a + g.dur_us, 0);
      return el('div.stage', { dataset: { line: String(l.stream) } },
        el('div.stage-label', null, `stream ${l.stream}`), track,
        el('div.stage-num', null, `${fmtUs(busy)} in ${ops.length} op${ops.length === 1 ? '' : 's'}`),
        el('div.stage-range.muted.op-names', { title: opNames(ops, Infinity) }, opNames(ops, 3)));
    }));
}

// The distinct op names of a line, most frequent first, with their counts ("nccl:all_to_all ×6");
// at most max of them, then how many more. The full list is the element's title.
function opNames(ops, max) {
  const n = new Map();
  for (const g of ops) n.set(g.name, (n.get(g.name) || 0) + 1);
  const names = [...n].sort((a, b) => b[1] - a[1]).map(([k, c]) => (c > 1 ? `${k} ×${c}` : k));
  const more = names.length - max;
  return more > 0 ? `${names.slice(0, max).join(', ')} and ${more} more` : names.join(', ');
}

function pointsBox(t) {
  const p = t.points || {};
  const rows = [['source', p.source], ['FP start', p.fp_start || '—'], ['FP origin', p.fp_origin || '—'],
    ['BP end', p.bp_end || '—'], ['BP origin', p.bp_origin || '—'], ['from step', p.step]];
  return el('dl.points', null, rows.map(([k, v]) => [el('dt', null, k), el('dd', { dataset: { point: k } }, v ?? '—')]));
}

function lineChart(rows, key, label, color, id) {
  return chart({
    type: 'line',
    data: { labels: rows.map((r) => r.step), datasets: [{ label, data: rows.map((r) => (r[key] === null ? null : r[key] / 1000)), borderColor: color, backgroundColor: color, pointRadius: 0, borderWidth: 1.5 }] },
    options: { scales: { x: { title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 10 } }, y: msAxis('ms') }, plugins: { legend: { display: false } } },
  }, { id, height: 180 });
}

// torch-tb-profiler's categories, in its order (docs/API.md, breakdown).
const BD_KEYS = [['kernel_us', 'kernel'], ['memcpy_us', 'memcpy'], ['memset_us', 'memset'],
  ['communication_us', 'communication'], ['runtime_us', 'runtime'], ['dataloader_us', 'dataloader'],
  ['cpu_exec_us', 'CPU exec'], ['other_us', 'other']];

// What of the rank's steps the breakdown covers, when that is not all of them (docs/API.md,
// breakdown "coverage"): the oldest steps whose spans were evicted past the rank's cap, and the
// trailing steps torch-tb-profiler trims.
function coverageNote(doc) {
  const c = doc.coverage;
  if (!c || (c.complete && !c.steps_trimmed && c.steps >= c.steps_listed)) return null;
  const parts = [`Covers ${fmtNum(c.steps)} of the ${fmtNum(c.steps_listed)} steps in the Steps table.`];
  if (!c.complete) {
    parts.push(`The analysis keeps the newest ${fmtNum(c.spans_max)} spans of a rank: ${fmtNum(c.spans_evicted)} older ones were dropped, `
      + `so the ${fmtNum(c.steps_cut)} steps that began before them are left out rather than shown from partial data.`);
  }
  if (c.steps_trimmed) {
    parts.push(`${fmtNum(c.steps_trimmed)} trailing step${c.steps_trimmed > 1 ? 's were' : ' was'} trimmed, as torch-tb-profiler does: `
      + 'the profiler stopped before its device work ended.');
  }
  return el(`p#bd-coverage.note.${c.complete ? 'info' : 'warn'}`, null, parts.join(' '));
}

// The breakdown's steps are the trace's step ranges; where the rank has step records (attach(),
// the Paddle/MindSpore hooks), /steps' steps are the records: same numbers (docs/ANALYSIS.md
// "Step identity"), other bounds. Each row then shows the record's total beside its own.
function breakdownView(ctx, doc, stepRows) {
  if (!doc.rows.length) return [note('empty', 'No step to break down yet (needs ProfilerStep spans or host operators).'), coverageNote(doc)];
  const a = doc.average || {};
  const recorded = new Map(stepRows.filter((r) => r.from === 'record').map((r) => [r.step, r.total_us]));
  const rows = recorded.size ? doc.rows.map((r) => ({ ...r, record_total_us: recorded.has(r.step) ? recorded.get(r.step) : null })) : doc.rows;
  const cols = [{ key: 'step', label: 'step', num: true }, { key: 'total_us', label: 'total', num: true, fmt: fmtUs },
    { key: 'step_us', label: 'own', num: true, fmt: fmtUs },
    ...(recorded.size ? [{ key: 'record_total_us', label: 'record total', num: true, fmt: fmtUs }] : []),
    ...BD_KEYS.map(([key, label]) => ({ key, label, num: true, fmt: fmtUs })),
    { key: 'device_events', label: 'device events', num: true, fmt: fmtNum }];
  const why = recorded.size ? el('p.note.info', { dataset: { note: 'bd-steps' } },
    'Steps here are the trace\'s own step ranges (ProfilerStep#N: from one prof.step() to the next; without any, one step 0 over all host operators). ',
    'The Steps table above holds the step records (attach(): from one next() to the next), with the same numbers: ',
    '"record total" differs from "total" by the loop\'s work between prof.step() and next(), and in a profiler window\'s last step by the trace handler\'s export, which runs after the range has closed. ',
    'See docs/ANALYSIS.md, "Step identity".') : null;
  return [
    el('div.kpis', null, kpi('step (mean)', fmtUs(a.total_us), 'bd-total'),
      ...BD_KEYS.filter(([k]) => a[k]).map(([k, label]) => kpi(label, `${fmtUs(a[k])} (${fmtPct((100 * a[k]) / a.total_us)})`, `bd-${label}`)),
      ...(doc.gpus || []).map((g) => kpi(`GPU ${g.device} utilisation`, fmtPct(100 * g.utilization), `gpu-${g.device}`))),
    coverageNote(doc),
    doc.total > doc.rows.length ? note('info', `The first ${fmtNum(doc.rows.length)} of ${fmtNum(doc.total)} steps.`) : null,
    why,
    doc.device_stretched ? note('info', 'As torch-tb-profiler does, each step is stretched to the end of the device work it launched: '
      + '"total" can exceed the step\'s "own" duration, its ProfilerStep span, which is the step\'s total in the Steps table above unless the rank sends step records (docs/ANALYSIS.md).') : null,
    chart({
      type: 'bar',
      data: { labels: doc.rows.map((r) => r.step), datasets: BD_KEYS.map(([k, label], i) => ({ label, data: doc.rows.map((r) => r[k] / 1000), backgroundColor: PALETTE[i], stack: 'b' })) },
      options: { barPercentage: 1, categoryPercentage: 0.9, scales: { x: { stacked: true, title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 12 } }, y: { ...msAxis('ms'), stacked: true } } },
    }, { id: 'breakdown' }),
    dataTable({ id: 'breakdown', columns: cols, rows, csv: `job${ctx.job}-breakdown.csv` }),
  ];
}

// A step's points come from its spans (trace) or its record's phases (docs/ANALYSIS.md, "Two
// definitions of a step's points"). counts: the average's sources over both definitions.
const SOURCE_WORDS = { trace: 'the trace', phases: 'phases' };
function sourcesBox(counts, source, choose) {
  const t = counts.trace || 0;
  const p = counts.phases || 0;
  const steps = (n) => `${fmtNum(n)} step${n === 1 ? '' : 's'}`;
  if (!t || !p) {
    if (!t && !p) return null;
    const only = t ? `${t === 1 ? 'The step takes its' : `All ${steps(t)} take their`} stages from the trace (their spans).`
      : `${p === 1 ? 'The step takes its' : `All ${steps(p)} take their`} stages from phases (their records' phases).`;
    return el('p#trace-sources.muted', null, only);
  }
  const said = `${steps(t)} take${t === 1 ? 's' : ''} ${t === 1 ? 'its' : 'their'} stages from the trace, ${fmtNum(p)} from phases`;
  const which = source ? `; this average uses ${SOURCE_WORDS[source]} only (${steps(source === 'trace' ? t : p)}).`
    : '; this average mixes both.';
  const btn = (v, label, title) => el('button.btn.small', { type: 'button', 'aria-pressed': (source || 'all') === v ? 'true' : 'false',
    dataset: { source: v }, title, onclick: () => choose(v === 'all' ? undefined : v) }, label);
  return el('div#trace-sources.controls', null,
    el('span.muted', null, said + which),
    btn('all', 'All', 'Average every step, whichever definition its points use'),
    btn('trace', 'Trace', 'Average the steps whose points come from their spans'),
    btn('phases', 'Phases', 'Average the steps whose points come from their records\' phases'));
}

export async function render(ctx) {
  const { rank } = ctx;
  const step = ctx.params.step;
  // The average: every step with points, or (skip=1) without the first, as MindInsight's.
  const skip = !step && ctx.params.skip === '1' ? 1 : undefined;
  // ?source=: the average of one definition only; the unfiltered answer then gives the counts.
  const source = !step && SOURCE_WORDS[ctx.params.source] ? ctx.params.source : undefined;
  const [trace, series, breakdown, both] = await Promise.all([
    getOptional(jobPath(ctx.job, 'step-trace', { rank, step, skip, source })),
    getJSON(jobPath(ctx.job, 'steps', { rank, max_points: MAX_POINTS, limit: 100000 })),
    hasRoute('/api/v1/jobs/{job}/breakdown')
      .then((has) => (has ? getOptional(jobPath(ctx.job, 'breakdown', { rank, limit: BREAKDOWN_ROWS })) : null))
      .catch((e) => ({ error: e })),
    source ? getOptional(jobPath(ctx.job, 'step-trace', { rank, skip })) : null,
  ]);
  const total = series.total;
  const offset = Math.max(0, total - TABLE_ROWS_MAX);
  const table = total > MAX_POINTS
    ? await getJSON(jobPath(ctx.job, 'steps', { rank, offset, limit: TABLE_ROWS_MAX }))
    : series;

  const input = el('input#step-input', { type: 'number', min: 0, placeholder: 'step', value: step || '', 'aria-label': 'step' });
  const choose = (v, sk, src) => ctx.go(ctx.hashFor('step-trace', { rank, step: v, skip: sk, source: src }));
  const controls = el('form.controls', { onsubmit: (e) => { e.preventDefault(); choose(input.value); } },
    el('button.btn', { type: 'button', 'aria-pressed': step || skip ? 'false' : 'true', dataset: { choose: 'average' }, onclick: () => choose('', undefined, source) }, 'Average'),
    el('button.btn', { type: 'button', 'aria-pressed': skip ? 'true' : 'false', dataset: { choose: 'average-skip1' }, title: 'MindInsight\'s average leaves out the first step', onclick: () => choose('', '1', source) }, 'Average without step 1'),
    el('label', null, 'Step ', input), el('button.btn', { type: 'submit' }, 'Show'));

  let head;
  if (!trace) {
    head = note('empty', step ? `Step ${step} has no FP/BP points on rank ${rank} (or does not exist).`
      : `No step with FP/BP points${source ? ` from ${SOURCE_WORDS[source]}` : ''} yet.`);
    if (source && both) head = [head, sourcesBox(both.sources || {}, source, (src) => choose('', skip ? '1' : undefined, src))];
  } else {
    const title = trace.step === 'average'
      ? `Average of ${fmtNum(trace.n_steps)} steps (${trace.first_step}–${trace.last_step})`
      : `Step ${trace.step}`;
    const definition = trace.step === 'average'
      ? `The mean of each point over the steps with FP/BP points${source ? ` from ${SOURCE_WORDS[source]}` : ''}${trace.skip ? `, leaving out the first ${trace.skip} (MindInsight's average leaves out step 1)` : ', the first included'}; the stages come from the mean points.`
      : null;
    head = [
      el('div.kpis', null, kpi('step', fmtUs(trace.total_us), 'total'), kpi('interval', fmtUs(trace.interval_us), 'interval'),
        kpi('FP+BP', fmtUs(trace.fp_bp_us), 'fp_bp'), kpi('tail', fmtUs(trace.tail_us), 'tail')),
      el('h4#trace-title', null, title),
      definition ? el('p#trace-definition.muted', null, definition) : null,
      trace.step === 'average' ? sourcesBox((both || trace).sources || {}, source, (src) => choose('', skip ? '1' : undefined, src)) : null,
      stageBars(trace),
      reduceLines(trace),
    ];
  }
  const tableCols = [
    { key: 'step', label: 'step', num: true },
    { key: 'total_us', label: 'total', num: true, fmt: fmtUs },
    { key: 'interval_us', label: 'interval', num: true, fmt: fmtUs },
    { key: 'fp_bp_us', label: 'FP+BP', num: true, fmt: fmtUs },
    { key: 'tail_us', label: 'tail', num: true, fmt: fmtUs },
    { key: 'samples', label: 'samples', num: true, fmt: fmtNum },
    { key: 'source', label: 'points' },
    { key: 'fp_start', label: 'FP start' },
    { key: 'bp_end', label: 'BP end' },
  ];
  let bd;
  if (breakdown && breakdown.error) bd = note('error', `Cannot load the breakdown: ${breakdown.error.message}`);
  else if (!breakdown) bd = note('unavailable', 'Breakdown unavailable: this daemon has no /breakdown route, or the rank has no spans for it.');
  else bd = breakdownView(ctx, breakdown, table.rows); // not series: folded rows average their totals

  return el('div.page', null,
    card('Step trace', { id: 'trace', cls: 'wide', actions: controls }, head,
      trace ? el('div.two', null, el('div', null, el('h4', null, 'FP/BP points'), pointsBox(trace))) : null),
    series.rows.length ? el('div.grid3', null,
      card('Step interval', { id: 'c-interval' }, lineChart(series.rows, 'interval_us', 'interval', PALETTE[0], 'chart-interval')),
      card('Forward + backward', { id: 'c-fpbp' }, lineChart(series.rows, 'fp_bp_us', 'FP+BP', PALETTE[1], 'chart-fpbp')),
      card('Step tail', { id: 'c-tail' }, lineChart(series.rows, 'tail_us', 'tail', PALETTE[2], 'chart-tail'))) : null,
    card('Steps', { id: 'steps', cls: 'wide' },
      offset ? note('info', `The last ${fmtNum(TABLE_ROWS_MAX)} of ${fmtNum(total)} steps; the CSV of all: `) : null,
      offset ? csvButton('steps-all', `job${ctx.job}-rank${rank}-steps-all.csv`, () => getBlob(jobPath(ctx.job, 'steps', { rank, limit: 100000, format: 'csv' })), 'CSV (every step)') : null,
      dataTable({ id: 'steps', columns: tableCols, rows: table.rows, csv: `job${ctx.job}-rank${rank}-steps.csv`,
        state: { q: ctx.params.q || '', sort: ctx.params.sort || '', order: ctx.params.order || 'desc', page: Number(ctx.params.page || 0) },
        onState: (s) => ctx.set({ ...ctx.params, ...s }),
        onRow: (r) => choose(String(r.step)) })),
    card('Breakdown per step', { id: 'breakdown', cls: 'wide' }, bd));
}
