// SPDX-License-Identifier: MIT
// Views over routes other parts of the daemon add (summaries, benchmark, breakdown). Their
// documents are shown generically: every array of objects becomes a table (search, sort,
// paging, CSV), scalars a list, and a series with a step and a number a chart. A route this
// daemon does not have (404) shows "unavailable".
import { getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note, fmtNum, tabs } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

const SUMMARY_KINDS = ['operators', 'kernels', 'memory', 'distributed', 'device', 'overview'];

function fmtCell(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return fmtNum(v, 3);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
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
        const columns = keys.map((key) => ({ key, label: key, num: v.some((x) => typeof x[key] === 'number'), fmt: fmtCell }));
        parts.push(el('h4', null, name), dataTable({ id: `${id}-${name}`, columns, rows: v, csv: `${id}-${name}.csv` }));
      } else if (v && typeof v === 'object' && !Array.isArray(v)) {
        walk(v, name);
      } else {
        scalars.push([name, v]);
      }
    }
  };
  walk(doc, '');
  const dl = scalars.length ? el('dl.points', null, scalars.map(([k, v]) => [el('dt', null, k), el('dd', null, fmtCell(v))])) : null;
  return el('div.generic', null, dl, parts.length ? parts : (dl ? null : note('empty', 'Nothing yet.')));
}

// A step series in doc: the first array of objects with a "step" and another numeric field.
function stepSeries(doc) {
  for (const v of Object.values(doc)) {
    if (Array.isArray(v) && v.length && typeof v[0] === 'object' && 'step' in v[0]) {
      const key = Object.keys(v[0]).find((k) => k !== 'step' && typeof v[0][k] === 'number' && /ips|throughput|samples_per/.test(k))
        || Object.keys(v[0]).find((k) => k !== 'step' && typeof v[0][k] === 'number');
      if (key) return { rows: v, key };
    }
  }
  return null;
}

export const summary = {
  async render(ctx) {
    const kind = ctx.params.kind || SUMMARY_KINDS[0];
    const doc = await hasRoute('/api/v1/jobs/{job}/summary/{kind}')
      ? await getOptional(jobPath(ctx.job, `summary/${encodeURIComponent(kind)}`, { rank: ctx.rank })) : null;
    const bar = tabs(SUMMARY_KINDS.map((k) => [k, k]), kind, (k) => ctx.go(ctx.hashFor('summary', { rank: ctx.rank, kind: k })));
    return el('div.page', null, card(`Summary: ${kind}`, { id: 'summary', cls: 'wide', actions: bar },
      doc ? genericDoc(doc, `summary-${kind}`) : note('unavailable', `Summary "${kind}" unavailable: this daemon has no such route (404).`)));
  },
};

export const benchmark = {
  async render(ctx) {
    const doc = await hasRoute('/api/v1/jobs/{job}/benchmark')
      ? await getOptional(jobPath(ctx.job, 'benchmark', { rank: ctx.rank })) : null;
    if (!doc) return el('div.page', null, card('Benchmark', { id: 'benchmark', cls: 'wide' }, note('unavailable', 'Benchmark unavailable: this daemon has no /benchmark route (404).')));
    const s = stepSeries(doc);
    return el('div.page', null,
      s ? card(`${s.key} over steps`, { id: 'benchmark-chart', cls: 'wide' }, chart({
        type: 'line',
        data: { labels: s.rows.map((r) => r.step), datasets: [{ label: s.key, data: s.rows.map((r) => r[s.key]), borderColor: PALETTE[0], pointRadius: 0 }] },
        options: { scales: { x: { title: { display: true, text: 'step' } } } },
      }, { id: 'benchmark' })) : null,
      card('Benchmark', { id: 'benchmark', cls: 'wide' }, genericDoc(doc, 'benchmark')));
  },
};
