// SPDX-License-Identifier: MIT
// A JSON document shown generically: every array of objects becomes a table (search, sort,
// paging, CSV), scalars a definition list, field names as a person reads them. Used by the
// views of Paddle's summaries and benchmark (views/summary.js, views/benchmark.js), whose
// documents have a shape per kind; also Paddle's text form of a table.
import { el, note, fmtNum } from './dom.js';
import { dataTable } from './table.js';

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
      if (Array.isArray(v) && !v.length) {
        // an empty table: its name and "none", not the scalar "[]"
        parts.push(el('h4', { dataset: { field: name } }, fieldLabel(name)), note('empty', 'None.'));
      } else if (Array.isArray(v) && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
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

// Paddle's text form of a table, as its summary() prints it (the route's ?format=text); null
// when the route has none.
export async function paddleText(path) {
  const res = await fetch(path);
  if (!res.ok) return null;
  const text = await res.text();
  // Paddle leaves a table out when it has no row (docs/ANALYSIS.md "The tables"): say so rather
  // than show an empty box
  if (!text.trim()) return note('empty', 'Paddle prints nothing for this table: it leaves out a table without rows.');
  return el('pre.paddle', { dataset: { text: '' } }, text);
}
