// SPDX-License-Identifier: MIT
// Jobs: every job the daemon knows, live or finished, with ranks, steps and last seen; search,
// sort, paging, CSV. A name opens the job's overview. Delete asks for a confirmation, then
// DELETEs the job (docs/API.md); a running job (a client connected) cannot be deleted.
import { deleteJSON, getJSON, jobPath } from '../api.js';
import { el, fmtBytes, fmtNum, fmtWall } from '../dom.js';
import { modal } from '../dialog.js';
import { dataTable } from '../table.js';

function confirmDelete(ctx, job) {
  modal({
    id: 'confirm-delete', title: `Delete job "${job.name}"?`, submit: 'Delete', danger: true,
    body: el('p', null, `Its ${fmtNum(job.steps)} steps, ${fmtNum(job.events)} trace events and every other record are removed from the daemon for good.`),
    onSubmit: async () => {
      await deleteJSON(jobPath(job.name));
      ctx.refresh();
      return true;
    },
  });
}

function deleteButton(ctx, job) {
  return el('button.btn.small.danger', {
    type: 'button', dataset: { delete: job.name }, disabled: job.live,
    title: job.live ? 'A client of this job is connected: stop it first' : `Delete job ${job.name}`,
    onclick: () => confirmDelete(ctx, job),
  }, 'Delete');
}

export async function render(ctx) {
  const doc = await getJSON('/api/v1/jobs');
  const rows = (doc.jobs || []).map((j) => ({ ...j, state: j.live ? 'live' : 'finished' }));
  const columns = [
    { key: 'id', label: 'id', num: true },
    { key: 'name', label: 'name', fmt: (v, r) => el('a.job-link', { href: `#/job/${r.id}/overview` }, v) },
    { key: 'state', label: 'state', fmt: (v) => el(`span.badge.${v === 'live' ? 'on' : 'off'}`, null, v === 'live' ? 'running' : 'finished') },
    { key: 'ranks', label: 'ranks', num: true, fmt: fmtNum },
    { key: 'steps', label: 'steps', num: true, fmt: fmtNum },
    { key: 'spans', label: 'spans', num: true, fmt: fmtNum },
    { key: 'stored_bytes', label: 'stored', num: true, fmt: fmtBytes },
    { key: 'last_seen_us', label: 'last seen', num: true, fmt: fmtWall },
  ];
  // Not a column of the table's CSV: the button goes into the last cell.
  columns[columns.length - 1].cell = (td, r) => td.append(' ', deleteButton(ctx, r));
  const live = rows.filter((r) => r.live).length;
  return el('div.page', null,
    el('div.page-head', null, el('h2', null, 'Jobs'),
      el('span.muted', null, `${rows.length} jobs, ${live} running`)),
    dataTable({
      id: 'jobs', columns, rows, state: ctx.params, csv: 'jobs.csv',
      searchKeys: ['name', 'id', 'state'], pageSize: 25,
      empty: 'No jobs yet: send records to the daemon\'s socket (README.md, "Sending data").',
      onState: (s) => ctx.set(s),
    }));
}
