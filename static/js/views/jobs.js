// SPDX-License-Identifier: MIT
// Jobs: every job the daemon knows, live or finished, with ranks, steps and last seen; search,
// sort, paging, CSV. A name opens the job's overview. (The API has no delete route yet, so
// there is no delete button: the store keeps every job until its retention evicts it.)
import { getJSON } from '../api.js';
import { el, fmtBytes, fmtNum, fmtWall } from '../dom.js';
import { dataTable } from '../table.js';

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
