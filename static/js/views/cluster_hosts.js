// SPDX-License-Identifier: MIT
// Cluster page, the Hosts card: one row per host and node of the job (as GET /api/v1/jobs/{job}
// names them: ranks_detail's host, or the rank's node when its hello named none), with its
// ranks, what its node has shipped (cluster_view: last step, steps behind the furthest node),
// its clock against the reference host's (clocks: offset ± spread, aligned or why not) and its
// stragglers (/ranks). Nodes behind and hosts not aligned carry a red badge; a figure that is
// absent says why in words. Below, this daemon's own shipping (/api/v1/stats "cluster").
import { getJSON, getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum } from '../dom.js';
import { dataTable } from '../table.js';

const hostOf = (r) => r.host || r.node || '';

// A lag figure's cell: the number, or why there is none.
function lagCell(v, why) {
  return v === null || v === undefined ? el('span.muted', null, why) : fmtNum(v);
}

function offsetText(h) {
  if (!h) return '0 (one host, one clock)';
  if (h.reason === 'reference') return '0 (reference)';
  if (h.aligned) return `${fmtUs(h.offset_us)} ± ${fmtUs(h.spread_us)}`;
  if (!h.steps) return 'not measured: no step in common';
  return `not applied (estimate ${fmtUs(h.estimate_us)} ± ${fmtUs(h.spread_us)})`;
}

// The rows: one per host and node (a host's ranks normally come through one node; ranks of
// one host shipped by several nodes, or nodes that share a host, get a row each), in the order
// of their first rank, as clocks lists its hosts.
export function hostRows(job, ranks) {
  const clocks = job.clocks && job.clocks.hosts ? new Map(job.clocks.hosts.map((h) => [h.host, h])) : null;
  const view = job.cluster_view || null;
  const nodes = view ? new Map(view.nodes.map((n) => [n.node, n])) : null;
  const strag = ranks ? new Map(ranks.ranks.map((r) => [r.rank, r.straggler])) : null;
  const groups = new Map();
  for (const r of job.ranks_detail) {
    const k = `${hostOf(r)}\u0000${r.node}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  return [...groups.values()].map((rs) => {
    const host = hostOf(rs[0]);
    const node = rs[0].node;
    const n = nodes ? nodes.get(node) : null;
    let lagWhy = '';
    if (!view) lagWhy = 'one daemon: nothing shipped';
    else if (view.step_window === null) lagWhy = "this daemon's own ranks";
    else if (!n) lagWhy = 'not in the cluster view';
    else if (n.last_step === null) lagWhy = 'none shipped yet';
    const h = clocks ? clocks.get(host) : null;
    return {
      host: host || '(not named)', node: node || '(this daemon)',
      ranks: rs.map((r) => r.rank).join(', '), rank_count: rs.length,
      last_step: lagWhy ? null : n.last_step, steps_behind: lagWhy ? null : n.steps_behind, lag_why: lagWhy,
      offset_us: h && h.aligned ? h.offset_us : (clocks ? null : 0), spread_us: h ? h.spread_us : null,
      offset: offsetText(clocks ? h || { aligned: false, steps: 0 } : null),
      aligned: clocks ? Boolean(h && h.aligned) : true,
      clock: clocks ? (h ? h.reason : 'not measured') : 'one host',
      stragglers: strag ? rs.filter((r) => strag.get(r.rank)).length : null,
    };
  });
}

function shippingLine(stats) {
  const c = stats && stats.cluster;
  if (!stats) return note('empty', "This daemon's shipping figures are unavailable (/api/v1/stats).");
  if (!c) return el('p.muted', { id: 'cluster-shipping' }, 'This daemon ships nothing (no cluster_url).');
  const err = c.failing ? `; failing: ${c.last_error || 'no reason given'}` : '';
  return el('p.muted', { id: 'cluster-shipping' },
    `This daemon's shipping: lag ${fmtNum(c.lag_ms)} ms, ${fmtNum(c.pending_batches)} batch(es) pending, ${fmtNum(c.retries)} retr${c.retries === 1 ? 'y' : 'ies'}${err}.`);
}

export async function hostsCard(ctx) {
  const [job, ranks, stats] = await Promise.all([
    getJSON(jobPath(ctx.job)),
    getOptional(jobPath(ctx.job, 'ranks')).catch(() => null),
    getOptional('/api/v1/stats').catch(() => null),
  ]);
  const rows = hostRows(job, ranks);
  const view = job.cluster_view || null;
  const head = [];
  if (!view) head.push(el('p.muted', { id: 'cluster-window' }, 'This job is on one daemon: no cluster view, so no node ships steps to it and none lags.'));
  else if (view.step_window === null) head.push(el('p.muted', { id: 'cluster-window' }, "Every rank is this daemon's own: no step window."));
  else if (view.step_window < 0) head.push(el('p.muted', { id: 'cluster-window' }, 'Step window: none yet (a node has shipped no step).'));
  else head.push(el('p.muted', { id: 'cluster-window' }, `Step window: step ${view.step_window}, the last step every node has shipped; the cross-rank figures count up to it.`));
  if (job.clocks && job.clocks.reference) head.push(el('p.muted', null, `Clocks against ${job.clocks.reference}'s: a host is aligned when its spread is within ${fmtUs(job.clocks.max_spread_us)}; the timeline export applies the offsets.`));
  else if (job.clocks) head.push(el('p.muted', null, 'No host has a step: the clocks could not be compared.'));
  if (view && view.conflicts.length) {
    head.push(note('warn', `Ranks shipped by more than one node: ${view.conflicts.map((c) => `rank ${c.rank} (${c.kept}'s kept, ${c.node}'s left out)`).join(', ')}.`));
  }
  const columns = [
    { key: 'host', label: 'host', nowrap: true },
    { key: 'node', label: 'node' },
    { key: 'ranks', label: 'ranks' },
    { key: 'last_step', label: 'last step shipped', num: true, fmt: (v, r) => lagCell(v, r.lag_why) },
    { key: 'steps_behind', label: 'steps behind', num: true,
      fmt: (v, r) => (v > 0 ? el('span', null, fmtNum(v), el('span.badge.bad', null, 'behind')) : lagCell(v, r.lag_why)) },
    { key: 'offset_us', label: 'clock offset', num: true, fmt: (v, r) => r.offset },
    { key: 'clock', label: 'clock', fmt: (v, r) => (r.aligned ? v : el('span', null, el('span.badge.bad', null, 'not aligned'), ` ${v}`)) },
    { key: 'stragglers', label: 'stragglers', num: true,
      fmt: (v) => (v === null ? el('span.muted', null, 'unavailable') : (v > 0 ? el('span', null, fmtNum(v), el('span.badge.bad', null, 'straggler')) : fmtNum(v))) },
  ];
  return card('Hosts', { id: 'cluster-hosts', cls: 'wide' }, ...head,
    dataTable({ id: 'cluster-hosts', columns, rows, csv: `job${ctx.job}-cluster-hosts.csv`, pageSize: 64 }),
    shippingLine(stats));
}
