// SPDX-License-Identifier: MIT
// Paddle's summaries (every kind of Profiler.summary(), as tables and as Paddle prints them) and
// its benchmark timer, with ips over the steps. The documents are shown generically: every array
// of objects becomes a table (search, sort, paging, CSV), scalars a list. A route this daemon does
// not serve (not in its OpenAPI document) shows "unavailable" without a failing request.
import { getJSON, getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note, fmtNum, tabs } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

// paddle.profiler's Profiler.summary() tables (docs/API.md, "Paddle's summaries and benchmark").
const SUMMARY_KINDS = ['overview', 'model', 'distributed', 'operator', 'kernel', 'memory', 'user-defined', 'device'];

function fmtCell(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return fmtNum(v, 3);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// A field name as a person reads it: "spans_cut" → "spans cut", "total_us" → "total (µs)",
// "a.max_spans" → "a › max spans". Only the page's words: CSV columns keep the API's names.
const UNITS = { us: 'µs', ns: 'ns', ms: 'ms', bytes: 'bytes', pct: '%' };
export function fieldLabel(name) {
  return name.split('.').map((k) => {
    const m = /^(.+)_(us|ns|ms|bytes|pct)$/.exec(k);
    const words = (m ? m[1] : k).replace(/_/g, ' ');
    return m ? `${words} (${UNITS[m[2]]})` : words;
  }).join(' › ');
}

// Tables for every array of objects in doc (depth-first), a definition list for its scalars.
export function genericDoc(doc, id) {
  const parts = [];
  const scalars = [];
  const walk = (obj, path) => {
    for (const [k, v] of Object.entries(obj)) {
      const name = path ? `${path}.${k}` : k;
      if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
        const keys = [...new Set(v.flatMap((x) => Object.keys(x)))];
        const columns = keys.map((key) => ({ key, label: fieldLabel(key), num: v.some((x) => typeof x[key] === 'number'), fmt: fmtCell }));
        parts.push(el('h4', { dataset: { field: name } }, fieldLabel(name)), dataTable({ id: `${id}-${name}`, columns, rows: v, csv: `${id}-${name}.csv` }));
      } else if (v && typeof v === 'object' && !Array.isArray(v)) {
        walk(v, name);
      } else {
        scalars.push([name, v]);
      }
    }
  };
  walk(doc, '');
  const dl = scalars.length ? el('dl.points', null, scalars.map(([k, v]) => [el('dt', { dataset: { field: k } }, fieldLabel(k)), el('dd', null, fmtCell(v))])) : null;
  return el('div.generic', null, dl, parts.length ? parts : (dl ? null : note('empty', 'Nothing yet.')));
}

// Paddle's text form of a table, as its summary() prints it.
async function paddleText(path) {
  const res = await fetch(path);
  if (!res.ok) return null;
  return el('pre.paddle', { dataset: { text: '' } }, await res.text());
}

export const summary = {
  async render(ctx) {
    const kind = SUMMARY_KINDS.includes(ctx.params.kind) ? ctx.params.kind : SUMMARY_KINDS[0];
    const bar = tabs(SUMMARY_KINDS.map((k) => [k, k]), kind, (k) => ctx.go(ctx.hashFor('summary', { rank: ctx.rank, kind: k })));
    if (!(await hasRoute('/api/v1/jobs/{job}/summary/{kind}'))) {
      return el('div.page', null, card('Summaries', { id: 'summary', cls: 'wide' }, note('unavailable', 'Summaries unavailable: this daemon has no /summary route.')));
    }
    const path = (fmt) => jobPath(ctx.job, `summary/${kind}`, { rank: ctx.rank, format: fmt });
    const [doc, text] = await Promise.all([getOptional(path()), paddleText(path('text'))]);
    return el('div.page', null, bar,
      card(`Summary: ${kind}`, { id: 'summary', cls: 'wide' },
        doc ? genericDoc(doc, `summary-${kind}`) : note('empty', `No steps in range for the ${kind} summary.`)),
      text ? card('As Paddle prints it', { id: 'summary-text', cls: 'wide' }, text) : null);
  },
};

export const benchmark = {
  async render(ctx) {
    if (!(await hasRoute('/api/v1/jobs/{job}/benchmark'))) {
      return el('div.page', null, card('Benchmark', { id: 'benchmark', cls: 'wide' }, note('unavailable', 'Benchmark unavailable: this daemon has no /benchmark route.')));
    }
    const bpath = (fmt) => jobPath(ctx.job, 'benchmark', { rank: ctx.rank, format: fmt });
    const [doc, text, steps] = await Promise.all([getOptional(bpath()), paddleText(bpath('text')),
      getJSON(jobPath(ctx.job, 'steps', { rank: ctx.rank, max_points: 2000, limit: 100000 }))]);
    // ips over steps from the steps the API lists (samples per second, or steps per second).
    const rows = steps.rows.filter((r) => r.total_us > 0);
    const withSamples = rows.length && rows.every((r) => r.samples !== null && r.samples >= 0);
    const ips = rows.map((r) => (withSamples ? r.samples : 1) / (r.total_us / 1e6));
    return el('div.page', null,
      card(`ips over steps (${withSamples ? 'samples/s' : 'steps/s'})`, { id: 'benchmark-chart', cls: 'wide' },
        rows.length ? chart({
          type: 'line',
          data: { labels: rows.map((r) => r.step), datasets: [{ label: 'ips', data: ips, borderColor: PALETTE[0], backgroundColor: PALETTE[0], pointRadius: 0, borderWidth: 1.5 }] },
          options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: 'step' }, ticks: { maxTicksLimit: 12 } }, y: { beginAtZero: true } } },
        }, { id: 'ips' }) : note('empty', 'No steps yet.')),
      card('Perf summary (Paddle\'s benchmark timer)', { id: 'benchmark', cls: 'wide' },
        doc ? genericDoc(doc, 'benchmark') : note('empty', 'No steps in range for the benchmark.'), text));
  },
};
