// SPDX-License-Identifier: MIT
// GPU: Holistic Trace Analysis's GPU views of every rank (docs/ANALYSIS.md "GPU time (HTA)").
// The temporal breakdown: per rank, idle, compute and non-compute time as stacked percentages of
// HTA's kernel time, and a table with the times, the device events HTA keeps and why. The kernel
// types: the time each set of types (computation, communication, memory and their overlaps)
// runs, over all ranks as HTA's pie, and per rank in a table, and its top kernels per type. The communication-computation
// overlap per rank, and the kernel launches HTA flags. Per CUDA stream: HTA's idle time
// breakdown (host wait, kernel wait, other) and the launch queue's length over time with its
// summary. The last step's device work is left out as HTA does unless "include last step" is
// chosen (in the URL: last_step=include). Times are the trace's nanoseconds unless "µs as HTA"
// is chosen (rounding=us: each event's start and duration floored to whole µs, as HTA reads a
// nanosecond trace by default, so the figures are HTA's printed ones).
import { getBlob, getOptional, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtPct, csvButton } from '../dom.js';
import { chart, colors, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

const PARTS = [['idle_pct', 'idle', '#bab0ac'], ['compute_pct', 'compute', PALETTE[0]], ['non_compute_pct', 'non-compute', PALETTE[1]]];

export async function render(ctx) {
  const lastStep = ctx.params.last_step === 'include' ? 'include' : 'exclude';
  const rounding = ctx.params.rounding === 'us' ? 'us' : 'ns';
  const q = (more) => ({ last_step: lastStep, rounding, ...more });
  const [doc, kt, km, ov, la, idle, queue] = await Promise.all([
    getOptional(jobPath(ctx.job, 'gpu/temporal', q())),
    getOptional(jobPath(ctx.job, 'gpu/kernel-types', q())),
    getOptional(jobPath(ctx.job, 'gpu/kernel-types', q({ table: 'kernels' }))),
    getOptional(jobPath(ctx.job, 'gpu/overlap', q())),
    getOptional(jobPath(ctx.job, 'gpu/launches', q({ limit: 1 }))),
    getOptional(jobPath(ctx.job, 'gpu/idle', q())),
    getOptional(jobPath(ctx.job, 'gpu/queue', q({ points: 500 }))),
  ]);
  const set = (k, v) => ctx.go(ctx.hashFor('gpu', { ...ctx.params, [k]: v }));
  const toggle = el('span', null,
    el('label.muted', null, el('input#gpu-last-step', {
      type: 'checkbox', checked: lastStep === 'include',
      onchange: (e) => set('last_step', e.target.checked ? 'include' : null),
    }), ' include the last profiler step'), ' ',
    el('label.muted', null, el('input#gpu-rounding', {
      type: 'checkbox', checked: rounding === 'us',
      onchange: (e) => set('rounding', e.target.checked ? 'us' : null),
    }), ' µs as HTA'));
  const rows = doc ? doc.rows.filter((r) => r.device_events > 0) : [];
  if (!rows.length) {
    return el('div.page', null, card('GPU time (HTA temporal breakdown)', { id: 'gpu-temporal', cls: 'wide' },
      note('empty', 'No rank has device events (kernels, memcpy, memset): GPU time needs a trace with CUDA activity.')));
  }
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'kernel_us', label: 'kernel time', num: true, fmt: fmtUs },
    { key: 'idle_us', label: 'idle', num: true, fmt: fmtUs },
    { key: 'compute_us', label: 'compute', num: true, fmt: fmtUs },
    { key: 'non_compute_us', label: 'non-compute', num: true, fmt: fmtUs },
    { key: 'idle_pct', label: 'idle %', num: true, fmt: fmtPct },
    { key: 'compute_pct', label: 'compute %', num: true, fmt: fmtPct },
    { key: 'non_compute_pct', label: 'non-compute %', num: true, fmt: fmtPct },
    { key: 'device_events_kept', label: 'device events kept', num: true, fmt: (v, r) => `${v} of ${r.device_events}` },
  ];
  const dropped = rows.filter((r) => r.filtered && r.device_events_kept < r.device_events);
  const why = lastStep === 'include'
    ? 'Device events launched before the last profiler step ended are counted, as HTA with include_last_profiler_step=True.'
    : 'As HTA does by default, device events launched in the last profiler step are left out (the profiler usually stops before their work ends).';
  const units = rounding === 'us'
    ? 'Each device event\'s start and duration floored to whole µs, as HTA reads a nanosecond trace: HTA\'s own figures.'
    : 'Times in the trace\'s nanoseconds; HTA floors each event to whole µs (µs as HTA), which on many short kernels gives less busy time.';
  return el('div.page', null,
    card('GPU time (HTA temporal breakdown)', { id: 'gpu-temporal', cls: 'wide', actions: toggle },
      el('p#gpu-why.muted', null, `${why} ${units} ${dropped.length ? `${dropped.length} rank(s) have device events left out.` : ''}`),
      chart({
        type: 'bar',
        data: {
          labels: rows.map((r) => `rank ${r.rank}`),
          datasets: PARTS.map(([k, label, color]) => ({ label: `${label} %`, data: rows.map((r) => r[k]), backgroundColor: color })),
        },
        options: { indexAxis: 'y', scales: { x: { stacked: true, max: 100, title: { display: true, text: '% of kernel time' } }, y: { stacked: true, ticks: { autoSkip: false } } } },
      }, { id: 'gpu-temporal-chart', height: Math.max(120, 40 + 28 * rows.length) }),
      dataTable({ id: 'gpu-temporal', columns, rows, csv: `job${ctx.job}-gpu-temporal.csv`, pageSize: 64,
        state: { sort: 'rank', order: 'asc' } })),
    kernelTypes(ctx, kt),
    topKernels(ctx, km),
    overlap(ctx, ov),
    launches(ctx, la),
    idleTime(ctx, idle),
    queueLength(ctx, queue));
}

const IDLE = [['host_wait', 'host wait', PALETTE[3]], ['kernel_wait', 'kernel wait', PALETTE[2]], ['other', 'other', '#bab0ac']];

// HTA's idle time breakdown: per rank and stream, the idle time by its cause.
function idleTime(ctx, doc) {
  const title = 'Idle time per stream (HTA)';
  const by = new Map();
  for (const r of doc ? doc.rows : []) {
    const k = `${r.rank}/${r.stream}`;
    if (!by.has(k)) by.set(k, { rank: r.rank, stream: r.stream, intervals: 0 });
    const row = by.get(k);
    row[`${r.idle_category}_us`] = r.idle_us;
    row[`${r.idle_category}_pct`] = r.idle_pct;
    row.intervals += r.intervals.count;
  }
  const rows = [...by.values()];
  if (!rows.length) return card(title, { id: 'gpu-idle', cls: 'wide' }, note('empty', 'No device event with a CUDA stream.'));
  const folded = doc.ranks.filter((r) => r.streams_folded_events > 0);
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'stream', label: 'stream', num: true },
    ...IDLE.map(([k, label]) => ({ key: `${k}_us`, label, num: true, fmt: fmtUs })),
    ...IDLE.map(([k, label]) => ({ key: `${k}_pct`, label: `${label} %`, num: true, fmt: fmtPct })),
    { key: 'intervals', label: 'gaps', num: true },
  ];
  return card(title, { id: 'gpu-idle', cls: 'wide' },
    el('p.muted', null, `Each gap between consecutive kernels of a stream is a host wait when the kernel was launched after the previous one ended, a kernel wait when shorter than ${doc.consecutive_kernel_delay_us} µs, else other. ` +
      (folded.length ? `${folded.map((r) => `rank ${r.rank}: ${r.streams_folded_events}`).join(', ')} device event(s) on streams past the 254 a rank can name are left out.` : '')),
    chart({
      type: 'bar',
      data: {
        labels: rows.map((r) => `rank ${r.rank} stream ${r.stream}`),
        datasets: IDLE.map(([k, label, color]) => ({ label: `${label} %`, data: rows.map((r) => r[`${k}_pct`]), backgroundColor: color })),
      },
      options: { indexAxis: 'y', scales: { x: { stacked: true, max: 100, title: { display: true, text: '% of the stream\'s idle time' } }, y: { stacked: true, ticks: { autoSkip: false } } } },
    }, { id: 'gpu-idle-chart', height: Math.max(120, 40 + 28 * rows.length) }),
    dataTable({ id: 'gpu-idle', columns, rows, csv: `job${ctx.job}-gpu-idle.csv`, pageSize: 64,
      state: { sort: 'rank', order: 'asc' } }));
}

// HTA's CUDA launch queue per rank and stream: its length over time and the summary.
function queueLength(ctx, doc) {
  const title = 'Launch queue length per stream (HTA)';
  const rows = doc ? doc.rows : [];
  if (!rows.length) return card(title, { id: 'gpu-queue', cls: 'wide' }, note('empty', 'No kernel launch linked to a device event on a CUDA stream.'));
  const t0 = Math.min(...rows.map((r) => r.series.ts_us[0]));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'stream', label: 'stream', num: true },
    { key: 'points', label: 'changes', num: true },
    { key: 'mean', label: 'mean', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'p50', label: 'median', num: true },
    { key: 'max', label: 'max', num: true },
    { key: 'full_us', label: `at ≥ ${doc.max_queue}`, num: true, fmt: fmtUs },
  ];
  const thinned = rows.filter((r) => r.kept < r.points).length;
  return card(title, { id: 'gpu-queue', cls: 'wide' },
    el('p.muted', null, `Operations launched on a stream and not yet started, after each launch and each kernel start (ms from the first launch). ${thinned ? `${thinned} series drawn with ${doc.max_points} points at most: each run of changes keeps its least and most.` : ''}`),
    chart({
      type: 'line',
      data: {
        datasets: rows.map((r, i) => ({
          label: `rank ${r.rank} stream ${r.stream}`,
          data: r.series.ts_us.map((t, j) => ({ x: (t - t0) / 1000, y: r.series.queue_length[j] })),
          borderColor: PALETTE[i % PALETTE.length], backgroundColor: PALETTE[i % PALETTE.length], pointRadius: 0, stepped: true,
        })),
      },
      options: { parsing: false, scales: { x: { type: 'linear', title: { display: true, text: 'ms' } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'queue length' } } } },
    }, { id: 'gpu-queue-chart', height: 260 }),
    dataTable({ id: 'gpu-queue', columns, rows, csv: `job${ctx.job}-gpu-queue.csv`, pageSize: 64,
      state: { sort: 'rank', order: 'asc' } }));
}

// HTA's kernel launch statistics: per rank the launches and how many HTA flags.
function launches(ctx, la) {
  const title = 'Kernel launches (HTA)';
  if (!la || !la.summary.length) return card(title, { id: 'gpu-launches', cls: 'wide' }, note('empty', 'No kernel launch linked to its device event.'));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'launches', label: 'launches', num: true },
    { key: 'short', label: 'short kernels', num: true },
    { key: 'runtime_outliers', label: `launch > ${la.runtime_cutoff_us} µs`, num: true },
    { key: 'delay_outliers', label: `delay > ${la.delay_cutoff_us} µs`, num: true },
  ];
  return card(title, { id: 'gpu-launches', cls: 'wide' },
    el('p.muted', null, 'Each launch pairs a runtime call with its device event (by correlation id). A short kernel runs for less time than its launch took. Every launch with its CPU and GPU durations, launch delay and flags: ',
      csvButton('gpu-launches-all', `job${ctx.job}-gpu-launches.csv`, () => getBlob(jobPath(ctx.job, 'gpu/launches', { last_step: la.last_step, rounding: la.rounding, format: 'csv' })), 'CSV (every launch)')),
    dataTable({ id: 'gpu-launches', columns, rows: la.summary, csv: `job${ctx.job}-gpu-launches-summary.csv`, pageSize: 64,
      state: { sort: 'rank', order: 'asc' } }));
}

// HTA's communication-computation overlap per rank.
function overlap(ctx, ov) {
  const title = 'Communication overlapped by computation (HTA)';
  const rows = ov ? ov.rows.filter((r) => r.communication_us > 0) : [];
  if (!rows.length) return card(title, { id: 'gpu-overlap', cls: 'wide' }, note('empty', 'No communication kernel ran.'));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'communication_us', label: 'communication', num: true, fmt: fmtUs },
    { key: 'overlap_us', label: 'overlapped', num: true, fmt: fmtUs },
    { key: 'overlap_pct', label: 'overlap %', num: true, fmt: fmtPct },
  ];
  return card(title, { id: 'gpu-overlap', cls: 'wide' },
    el('p.muted', null, 'The part of each rank\'s communication kernel time during which a computation kernel runs too.'),
    dataTable({ id: 'gpu-overlap', columns, rows, csv: `job${ctx.job}-gpu-overlap.csv`, pageSize: 64,
      state: { sort: 'rank', order: 'asc' } }));
}

// HTA's kernel-type split: the sets over all ranks (its pie) and each rank's rows.
// HTA's per-kernel table: per rank and kernel type its top kernels, the rest folded into
// "others" as HTA folds them (num_kernels 10, duration_ratio 0.8).
function topKernels(ctx, km) {
  const title = 'Top kernels per type (HTA)';
  if (!km || !km.rows.length) return card(title, { id: 'gpu-top-kernels', cls: 'wide' }, note('empty', 'No computation, communication or memory kernel ran.'));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'kernel_type', label: 'kernel type' },
    { key: 'name', label: 'kernel' },
    { key: 'sum_us', label: 'sum', num: true, fmt: fmtUs },
    { key: 'max_us', label: 'max', num: true, fmt: fmtUs },
    { key: 'min_us', label: 'min', num: true, fmt: fmtUs },
    { key: 'mean_us', label: 'mean', num: true, fmt: fmtUs },
    { key: 'stddev', label: 'stddev', num: true, fmt: fmtUs },
  ];
  return card(title, { id: 'gpu-top-kernels', cls: 'wide' },
    el('p.muted', null, `Per rank and kernel type, the ${km.num_kernels} kernels with the most time at most; past them, and past ${fmtPct(km.duration_ratio * 100)} of the running total, the rest is one "others" row. As HTA re-aggregates its table, a kept kernel's max, min and mean show its sum, and "others" the spread of its kernels' sums.`),
    dataTable({ id: 'gpu-top-kernels', columns, rows: km.rows, csv: `job${ctx.job}-gpu-top-kernels.csv`, pageSize: 40 }));
}

function kernelTypes(ctx, kt) {
  const title = 'Kernel types (HTA)';
  if (!kt || !kt.rows.length) return card(title, { id: 'gpu-kernel-types', cls: 'wide' }, note('empty', 'No computation, communication or memory kernel ran.'));
  const columns = [
    { key: 'rank', label: 'rank', num: true },
    { key: 'kernel_type', label: 'kernel type' },
    { key: 'us', label: 'time', num: true, fmt: fmtUs },
    { key: 'pct', label: '% of rank', num: true, fmt: fmtPct },
  ];
  return card(title, { id: 'gpu-kernel-types', cls: 'wide' },
    el('p.muted', null, 'The time the device runs exactly each set of kernel types; overlaps are their own set, as HTA splits them. The pie sums the ranks.'),
    chart({
      type: 'doughnut',
      data: { labels: kt.all_ranks.map((r) => r.kernel_type), datasets: [{ data: kt.all_ranks.map((r) => r.us / 1000), backgroundColor: colors(kt.all_ranks.length) }] },
      options: { plugins: { legend: { position: 'right' } } },
    }, { id: 'gpu-kernel-types-chart', height: 220 }),
    dataTable({ id: 'gpu-kernel-types', columns, rows: kt.rows, csv: `job${ctx.job}-gpu-kernel-types.csv`, pageSize: 64,
      state: { sort: 'rank', order: 'asc' } }));
}
