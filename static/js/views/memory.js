// SPDX-License-Identifier: MIT
// Memory: torch-tb-profiler's memory view of one rank (docs/ANALYSIS.md "Memory view"). A tab per
// device; for it, allocated and reserved bytes over time (the profiler's [memory] events, and the
// allocator's per-step samples when the collector sent them), the peak marked on the curve and
// named with its time and step, and the operators' allocations (tb-profiler's table: calls, size
// increase, allocation count and size, each in total and self), sortable, CSV. The device and
// the table's sort are in the URL (#/job/3/memory?device=GPU0&sort=self_size_increase).
import { getJSON, jobPath } from '../api.js';
import { el, card, note, tabs, fmtBytes } from '../dom.js';
import { chart, PALETTE } from '../charts.js';
import { dataTable } from '../table.js';

const SOURCES = { trace: 'profiler', allocator: 'allocator (per step)' };

export async function render(ctx) {
  const doc = await getJSON(jobPath(ctx.job, 'memory', { rank: ctx.rank }));
  const devices = [...new Set(doc.devices.map((s) => s.device))];
  if (!devices.length) {
    return el('div.page', null, card('Memory', { id: 'memory', cls: 'wide' },
      note('empty', 'No memory events on this rank: record a profiler window with profile_memory=True, or attach() on CUDA (its allocator samples).')));
  }
  const device = devices.includes(ctx.params.device) ? ctx.params.device
    : devices.find((d) => d.startsWith('GPU')) || devices[0];
  const bar = tabs(devices.map((d) => [d, d]), device,
    (d) => ctx.go(ctx.hashFor('memory', { rank: ctx.rank, device: d })));
  const series = doc.devices.filter((s) => s.device === device);
  const t0 = Math.min(...series.filter((s) => s.points).map((s) => s.first_ts_ns));
  const ms = (ns) => (ns - t0) / 1e6;
  const datasets = [];
  series.forEach((s, i) => {
    const tag = series.length > 1 ? ` (${SOURCES[s.source]})` : '';
    datasets.push({ label: `allocated${tag}`, data: s.curve.map((p) => ({ x: ms(p[0]), y: p[1] })),
      borderColor: PALETTE[2 * i], backgroundColor: PALETTE[2 * i], pointRadius: 0, stepped: true, borderWidth: 1.5 });
    if (s.curve.some((p) => p[2] !== null)) {
      datasets.push({ label: `reserved${tag}`, data: s.curve.filter((p) => p[2] !== null).map((p) => ({ x: ms(p[0]), y: p[2] })),
        borderColor: PALETTE[2 * i + 1], backgroundColor: PALETTE[2 * i + 1], pointRadius: 0, stepped: true, borderWidth: 1.5 });
    }
  });
  const peaks = series.filter((s) => s.points);
  datasets.push({ label: 'peak', type: 'scatter', data: peaks.map((s) => ({ x: ms(s.peak_ts_ns), y: s.peak_allocated })),
    borderColor: '#e15759', backgroundColor: '#e15759', pointRadius: 6, pointStyle: 'triangle' });
  const peakLines = peaks.map((s) => el('li', { dataset: { peak: s.source } },
    el('strong', null, `Peak ${fmtBytes(s.peak_allocated)}`),
    ` (${s.peak_allocated} B) allocated at ${ms(s.peak_ts_ns).toFixed(3)} ms`,
    s.peak_step !== null ? `, step ${s.peak_step}` : '',
    s.peak_reserved !== null ? `; reserved up to ${fmtBytes(s.peak_reserved)}` : '',
    ` — ${SOURCES[s.source]}, ${s.points} points${s.kept < s.points ? ` (${s.kept} drawn: each bucket keeps its extremes)` : ''}`));
  const rows = doc.operators.filter((r) => r.device === device);
  const columns = [
    { key: 'name', label: 'operator' },
    { key: 'calls', label: 'calls', num: true },
    { key: 'size_increase', label: 'size increase', num: true, fmt: fmtBytes },
    { key: 'self_size_increase', label: 'self size increase', num: true, fmt: fmtBytes },
    { key: 'allocation_count', label: 'allocations', num: true },
    { key: 'self_allocation_count', label: 'self allocations', num: true },
    { key: 'allocation_size', label: 'allocation size', num: true, fmt: fmtBytes },
    { key: 'self_allocation_size', label: 'self allocation size', num: true, fmt: fmtBytes },
  ];
  const st = { q: ctx.params.q || '', sort: ctx.params.sort || 'self_size_increase', order: ctx.params.order || 'desc' };
  return el('div.page', null,
    card(`Memory of ${device}`, { id: 'memory-curve', cls: 'wide', actions: bar },
      el('ul#memory-peaks.plain', null, peakLines),
      chart({
        type: 'line',
        data: { datasets },
        options: {
          parsing: false,
          scales: {
            x: { type: 'linear', title: { display: true, text: 'ms since the first point' } },
            y: { title: { display: true, text: 'bytes' }, ticks: { callback: (v) => fmtBytes(v) } },
          },
        },
      }, { id: 'memory-chart', height: 260 })),
    card('Operators\' allocations (tb-profiler)', { id: 'memory-operators', cls: 'wide' },
      el('p.muted', null, `Per operator on ${device}: "self" counts the memory events whose innermost host operator is this one, the others add every operator below it; frees count negative in the size increase. ${doc.unattributed} of ${doc.attributed + doc.unattributed} events lie outside any operator.`),
      rows.length ? dataTable({ id: 'memory-operators', columns, rows, csv: `job${ctx.job}-memory-${device}.csv`, pageSize: 50,
        state: st, onState: (s) => ctx.set({ ...ctx.params, device, ...s }) })
        : note('empty', 'No operator allocated or freed memory on this device.')));
}
