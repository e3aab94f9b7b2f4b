// SPDX-License-Identifier: MIT
// A table with search, sort by any column, paging and CSV download, all on the rows it was
// given (the views fetch whole tables; the daemon caps them). State (search, sort, order, page)
// comes from and goes to the caller, which keeps it in the URL hash.
import { el, csvButton, toCsv } from './dom.js';

// opts: {id, columns: [{key, label, num, fmt(v, row), nowrap: a marker column ("removed") that
//        keeps its word on one line however long the other cells are}], rows,
//        state: {q, sort, order, page},
//        onState(newState), pageSize, onRow(row), csv: file name, searchKeys: [keys],
//        expand(row): a click on a row opens (or closes) a detail row under it holding what
//        expand returns (an element, or a promise of one)}
export function dataTable(opts) {
  const pageSize = opts.pageSize || 20;
  const st = { q: '', sort: '', order: 'desc', page: 0, ...opts.state };
  const keys = opts.searchKeys || opts.columns.filter((c) => !c.num).map((c) => c.key);
  const root = el('div.table-wrap', { dataset: { table: opts.id } });

  const search = el('input.search', {
    type: 'search', placeholder: 'Search', value: st.q, 'aria-label': 'search',
    oninput: () => { st.q = search.value; st.page = 0; changed(); },
  });
  const csvBtn = csvButton(opts.id, opts.csv || `${opts.id}.csv`, () => toCsv(opts.columns, filtered()));
  const info = el('span.muted.count');
  const table = el('table.data');
  const pager = el('div.pager');
  root.append(el('div.table-tools', null, search, info, csvBtn), table, pager);

  function filtered() {
    const q = st.q.trim().toLowerCase();
    let rows = opts.rows;
    if (q) rows = rows.filter((r) => keys.some((k) => String(r[k] ?? '').toLowerCase().includes(q)));
    if (st.sort) {
      const col = opts.columns.find((c) => c.key === st.sort);
      const dir = st.order === 'asc' ? 1 : -1;
      rows = [...rows].sort((a, b) => {
        const x = a[st.sort];
        const y = b[st.sort];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        if (col && col.num) return (x - y) * dir;
        return String(x).localeCompare(String(y)) * dir;
      });
    }
    return rows;
  }

  function changed() {
    draw();
    if (opts.onState) opts.onState({ q: st.q, sort: st.sort, order: st.order, page: st.page });
  }

  // The detail row of an expandable table: under tr, one cell across the columns.
  function toggle(tr, r) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains('detail')) {
      next.remove();
      tr.setAttribute('aria-expanded', 'false');
      return;
    }
    const cell = el('td', { colspan: opts.columns.length }, el('span.muted', null, 'Loading…'));
    tr.after(el('tr.detail', null, cell));
    tr.setAttribute('aria-expanded', 'true');
    Promise.resolve(opts.expand(r)).then((node) => cell.replaceChildren(node),
      (e) => cell.replaceChildren(el('p.note.error', { role: 'alert' }, String(e.message || e))));
  }

  function draw() {
    const rows = filtered();
    const pages = Math.max(1, Math.ceil(rows.length / pageSize));
    if (st.page >= pages) st.page = pages - 1;
    const head = el('tr', null, opts.columns.map((c) => {
      const arrow = st.sort === c.key ? (st.order === 'asc' ? ' ▲' : ' ▼') : '';
      return el(`th${c.num ? '.num' : ''}`, {
        dataset: { sort: c.key }, tabindex: 0, 'aria-sort': st.sort === c.key ? (st.order === 'asc' ? 'ascending' : 'descending') : null,
        onclick: () => {
          if (st.sort === c.key) st.order = st.order === 'asc' ? 'desc' : 'asc';
          else { st.sort = c.key; st.order = c.num ? 'desc' : 'asc'; }
          st.page = 0;
          changed();
        },
      }, c.label + arrow);
    }));
    const body = el('tbody');
    for (const r of rows.slice(st.page * pageSize, (st.page + 1) * pageSize)) {
      const click = opts.onRow ? () => opts.onRow(r) : opts.expand ? () => toggle(tr, r) : null;
      const tr = el('tr', click ? { class: 'clickable', onclick: click, 'aria-expanded': opts.expand ? 'false' : null } : null,
        opts.columns.map((c) => {
          const td = el(`td${c.num ? '.num' : ''}${c.nowrap ? '.nowrap' : ''}`, null, c.fmt ? c.fmt(r[c.key], r) : (r[c.key] ?? '—'));
          if (c.cell) c.cell(td, r);
          return td;
        }));
      body.appendChild(tr);
    }
    if (rows.length === 0) {
      body.appendChild(el('tr', null, el('td.empty', { colspan: opts.columns.length },
        opts.rows.length ? 'No row matches the search.' : (opts.empty || 'No rows yet.'))));
    }
    table.replaceChildren(el('thead', null, head), body);
    info.textContent = `${rows.length} of ${opts.rows.length} rows`;
    const go = (p) => { st.page = p; changed(); };
    pager.replaceChildren(
      el('button.btn', { type: 'button', disabled: st.page === 0, dataset: { page: 'prev' }, onclick: () => go(st.page - 1) }, '‹ Prev'),
      el('span.page-no', null, `Page ${st.page + 1} of ${pages}`),
      el('button.btn', { type: 'button', disabled: st.page >= pages - 1, dataset: { page: 'next' }, onclick: () => go(st.page + 1) }, 'Next ›'));
  }

  draw();
  return root;
}
