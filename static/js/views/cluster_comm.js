// SPDX-License-Identifier: MIT
// The Cluster view's communication cards (/cluster/communication, /cluster/links): per rank,
// communication and wait cost as bars, and the link table (per link and link type: cost, size,
// bandwidth), sortable, filtered by link type, or one link alone (src_rank, dst_rank: the link the
// helper's cluster_link names); for the step the view shows (0: MindSpore's average row). Jobs without MindSpore's hccl_raw files get the daemon's reason instead.
// And torch-tb-profiler's communication-operator table per worker (commOpsCard).
import { getJSON, getOptional, ApiError, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtBytes, fmtNum } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

// The answer (its reason non-null for a job without hccl_raw), or { reason } for a 404 (no rank
// has the step).
async function fetchOr404(path) {
  try {
    return await getJSON(path);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { reason: e.message.replace(/^\d+ \S+: /, '') };
    throw e;
  }
}

// ctx: the view's; step: 0 or the step; linkType: '' or the filter; go(params): navigates.
export async function communicationCards(ctx, step, linkType, go) {
  const comm = await fetchOr404(jobPath(ctx.job, 'cluster/communication', { step: step || null }));
  if (comm.reason) { // no hccl_raw in this job (the daemon says why), or no rank has the step
    return [card('Cluster communication', { id: 'cluster-comm', cls: 'wide' }, note('empty', comm.reason))];
  }
  // src_rank and dst_rank (the helper's cluster_link names a link): that link's rows alone
  const named = ['src_rank', 'dst_rank'].map((k) => (/^\d+$/.test(ctx.params[k] ?? '') ? Number(ctx.params[k]) : null));
  const one = named.every((v) => v !== null);
  const all = await getJSON(jobPath(ctx.job, 'cluster/links', {
    step: step || null, src_rank: one ? named[0] : null, dst_rank: one ? named[1] : null, limit: 100000,
  }));
  const types = [...new Set(all.links.map((l) => l.link_type))].sort();
  const links = linkType ? all.links.filter((l) => l.link_type === linkType) : all.links;
  const typeSel = el('select#cluster-link-type', { 'aria-label': 'link type', onchange: (e) => go({ link_type: e.target.value }) },
    el('option', { value: '', selected: !linkType }, 'all link types'),
    ...types.map((t) => el('option', { value: t, selected: linkType === t }, t)));
  const what = comm.step === 'average' ? "MindSpore's average row" : `step ${comm.step}`;
  const bars = chart({
    type: 'bar',
    data: {
      labels: comm.ranks.map((r) => `rank ${r.rank}`),
      datasets: [
        { label: 'communication cost', data: comm.ranks.map((r) => r.communication_cost_us / 1000), backgroundColor: PALETTE[0] },
        { label: 'wait cost', data: comm.ranks.map((r) => r.wait_cost_us / 1000), backgroundColor: PALETTE[1] },
      ],
    },
    options: { scales: { y: { beginAtZero: true, title: { display: true, text: 'ms' } } } },
  }, { id: 'cluster-comm-bars', height: 200 });
  const rows = links.map((l) => ({ ...l }));
  const columns = [
    { key: 'src_dst', label: 'src-dst' },
    { key: 'link_type', label: 'link type' },
    { key: 'rank', label: 'reported by rank', num: true },
    { key: 'communication_cost_us', label: 'cost', num: true, fmt: fmtUs },
    { key: 'communication_size_bytes', label: 'size', num: true, fmt: fmtBytes },
    { key: 'band_width_bytes_per_s', label: 'bandwidth (B/s)', num: true, fmt: fmtNum },
  ];
  const linksCard = card('Links', { id: 'cluster-links', cls: 'wide', actions: el('span.controls', null, typeSel) },
    one ? el('p.muted', { id: 'cluster-links-named' }, `Link ${named[0]}-${named[1]} alone, as the helper names it. `,
      el('a', { href: ctx.hashFor('cluster', { step: step || null, link_type: linkType || null }) }, 'All links')) : null,
    dataTable({ id: 'cluster-links', columns, rows, csv: `job${ctx.job}-cluster-links.csv`, pageSize: 50,
      state: { sort: 'communication_cost_us', order: 'desc' } }));
  const cards = [
    card('Cluster communication', { id: 'cluster-comm', cls: 'wide' },
      el('p.muted', { id: 'cluster-comm-what' }, `${what}; per rank, from MindSpore's hccl_raw files.`),
      bars),
    linksCard,
  ];
  if (one) requestAnimationFrame(() => linksCard.scrollIntoView({ block: 'start' }));
  return cards;
}

// torch-tb-profiler's distributed view, Communication Operations Stats (/comm-ops): per worker
// (rank) and communication operator its calls, sizes, latency, the transfer time the slowest
// rank leaves and the wait before it. Empty for a job without communication operators.
export async function commOpsCard(ctx) {
  const doc = await getOptional(jobPath(ctx.job, 'comm-ops'));
  if (!doc || !doc.rows.length) {
    return card('Communication operators', { id: 'comm-ops', cls: 'wide' },
      note('empty', 'No communication operators (nccl:*, gloo:* host spans) in this job\'s stored spans.'));
  }
  const columns = [
    { key: 'rank', label: 'worker (rank)', num: true },
    { key: 'name', label: 'operator' },
    { key: 'calls', label: 'calls', num: true, fmt: fmtNum },
    { key: 'total_bytes', label: 'total size', num: true, fmt: fmtBytes },
    { key: 'avg_bytes', label: 'avg size', num: true, fmt: fmtBytes },
    { key: 'latency_us', label: 'total latency', num: true, fmt: fmtUs },
    { key: 'avg_latency_us', label: 'avg latency', num: true, fmt: fmtUs },
    { key: 'transfer_us', label: 'data transfer', num: true, fmt: fmtUs },
    { key: 'avg_transfer_us', label: 'avg data transfer', num: true, fmt: fmtUs },
    { key: 'wait_us', label: 'wait', num: true, fmt: fmtUs },
  ];
  return card('Communication operators, as torch-tb-profiler shows them', { id: 'comm-ops', cls: 'wide' },
    el('p.muted', { id: 'comm-ops-what' }, `${doc.ranks.length} worker(s); per operator, latency is its calls' host spans and the kernels they launched; `
      + 'data transfer is the part the slowest rank leaves (each interval at its shortest over the ranks), wait the rest.'),
    dataTable({ id: 'comm-ops', columns, rows: doc.rows, csv: `job${ctx.job}-comm-ops.csv`, pageSize: 50,
      state: { sort: 'rank', order: 'asc' } }));
}
