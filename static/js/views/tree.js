// SPDX-License-Identifier: MIT
// Hierarchy: /api/v1/jobs/{job}/tree as a collapsible tree (docs/API.md "Hierarchies"), with an
// Operators / Modules switch. The operator tree is Paddle's operator summary with its detail
// rows: each operator, its inner calls (infer_shape, compute, ...) and the device events each
// launched, with calls, CPU total and self time, device time and self device time. The module
// tree is torch-tb-profiler's module view: each nn.Module and the modules it called, with
// occurrences, operators, host and device time. The CSV button downloads the route's flat rows
// (format=csv). A node opens and closes with its ▸ button; the open nodes are remembered by their
// stable ids, so a live refresh keeps them open.
import { getBlob, getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtPct, tabs, csvButton } from '../dom.js';

const KINDS = [['operator', 'Operators'], ['module', 'Modules']];
const TITLES = {
  operator: 'Operator tree (Paddle\'s operator summary)',
  module: 'Module tree (torch-tb-profiler\'s module view)',
};
const ABOUT = {
  operator: (doc) => `Operators by CPU total; under each, its inner calls and the device events each launched (linked by the runtime call's correlation: ${doc.device_events_linked} of ${doc.device_events} device events). Self time leaves out the nested calls; device time counts everything launched beneath.`,
  module: (doc) => `Modules (nn.Module calls, recorded with with_modules=True: ${doc.module_spans} calls) by name; under each, the modules it called. Calls are tb-profiler's occurrences; operators, the operators called directly in it; self time leaves out the nested calls and modules; self device time is its own operators' device time.`,
};
const EMPTY = {
  operator: 'No operator spans: the tree needs a trace with operators (cpu_op, Paddle\'s Operator events).',
  module: 'No module spans: the module tree needs a Kineto trace recorded with with_modules=True (python_function spans named "nn.Module: …").',
};
const opened = new Set(); // ids of the open nodes (ids are stable across answers)

const COLUMNS = [
  ['calls', 'calls', String],
  ['operators', 'operators', String, 'module'],
  ['total_us', 'total', fmtUs],
  ['self_us', 'self', fmtUs],
  ['avg_us', 'avg', fmtUs],
  ['percent', '% of parent', fmtPct],
  ['device_us', 'device', fmtUs],
  ['self_device_us', 'self device', fmtUs],
  ['device_percent', 'device % of parent', fmtPct],
];

// The nodes in pre-order with their depth and parent id.
function flatten(nodes, parent = null, depth = 0, out = []) {
  for (const n of nodes) {
    out.push({ node: n, parent, depth });
    flatten(n.children, n.id, depth + 1, out);
  }
  return out;
}

// Hides every row one of whose ancestors is closed.
function showOpen(rows) {
  const shown = new Map(); // id -> whether its children show
  for (const tr of rows) {
    const p = tr.dataset.parent;
    const visible = !p || shown.get(p) === true;
    tr.hidden = !visible;
    shown.set(tr.dataset.id, visible && opened.has(tr.dataset.id));
    if (tr.dataset.leaf !== '1') {
      const open = opened.has(tr.dataset.id);
      tr.setAttribute('aria-expanded', open ? 'true' : 'false');
      tr.querySelector('button.toggle').textContent = open ? '▾' : '▸';
    }
  }
}

export async function render(ctx) {
  const kind = KINDS.some(([k]) => k === ctx.params.kind) ? ctx.params.kind : KINDS[0][0];
  const bar = tabs(KINDS, kind, (k) => ctx.go(ctx.hashFor('tree', { rank: ctx.rank, kind: k, steps: ctx.params.steps })));
  if (!(await hasRoute('/api/v1/jobs/{job}/tree'))) {
    return el('div.page', null, card('Hierarchy', { id: 'tree', cls: 'wide' }, note('unavailable', 'Hierarchy unavailable: this daemon has no /tree route.')));
  }
  const params = { kind, rank: ctx.rank, steps: ctx.params.steps };
  const doc = await getOptional(jobPath(ctx.job, 'tree', params));
  const title = TITLES[kind];
  if (!doc) return el('div.page', null, bar, card(title, { id: 'tree', cls: 'wide' }, note('empty', 'No steps in range.')));
  if (!doc.nodes.length) return el('div.page', null, bar, card(title, { id: 'tree', cls: 'wide' }, note('empty', EMPTY[kind])));
  const columns = COLUMNS.filter((c) => !c[3] || c[3] === kind);
  const flat = flatten(doc.nodes);
  const rows = flat.map(({ node: n, parent, depth }) => {
    const leaf = n.children.length === 0;
    const toggle = leaf ? el('span.toggle-pad') : el('button.toggle', {
      type: 'button', 'aria-label': `open ${n.name}`,
      onclick: () => {
        if (opened.has(n.id)) opened.delete(n.id);
        else opened.add(n.id);
        showOpen(rows);
      },
    }, '▸');
    const name = el('td.tree-name', null, toggle, el('span.tree-label', { title: n.name }, n.name));
    name.style.paddingLeft = `${0.6 + 1.2 * depth}rem`;
    return el(`tr.tree-${n.kind}`, {
      dataset: { id: n.id, parent: parent || '', depth: String(depth), kind: n.kind, leaf: leaf ? '1' : '0' },
      'aria-level': String(depth + 1),
    }, name, el('td', null, n.kind), columns.map(([k, , fmt]) => el('td.num', null, n[k] === null ? '—' : fmt(n[k]))));
  });
  showOpen(rows);
  const setAll = (open) => {
    for (const { node: n } of flat) {
      if (!n.children.length) continue;
      if (open) opened.add(n.id);
      else opened.delete(n.id);
    }
    showOpen(rows);
  };
  const actions = el('span.controls', null,
    el('button#tree-expand.btn', { type: 'button', onclick: () => setAll(true) }, 'Expand all'),
    el('button#tree-collapse.btn', { type: 'button', onclick: () => setAll(false) }, 'Collapse all'),
    csvButton('tree', `job${ctx.job}-tree-${kind}.csv`, () => getBlob(jobPath(ctx.job, 'tree', { ...params, format: 'csv' }))));
  const steps = doc.first_step === null ? '' : ` Steps ${doc.first_step}–${doc.last_step}.`;
  return el('div.page', null, bar,
    card(title, { id: 'tree', cls: 'wide', actions },
      el('p#tree-about.muted', null,
        `${ABOUT[kind](doc)}${steps}`),
      el('div.table-wrap', null, el('table.data.tree', { role: 'treegrid', dataset: { table: 'tree' } },
        el('thead', null, el('tr', null, el('th', null, 'name'), el('th', null, 'kind'), columns.map(([, label]) => el('th.num', null, label)))),
        el('tbody', null, rows)))));
}
