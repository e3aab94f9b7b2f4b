// SPDX-License-Identifier: MIT
// Chart.js (window.Chart, the UMD build the meson build copies from node_modules into
// vendor/chart.umd.js) behind a few helpers. Without it, each chart is a note saying so and the
// tables still work. Animations are off: live views redraw often, and the first paint of a big
// job must be quick. The API downsamples series (no chart gets more than ~2000 points).
import { el, note, swatch, fmtPct, fmtUs } from './dom.js';

export const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948',
  '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

// n colours, no two alike: the palette, then hues a golden angle apart (a pie of 20 operator
// types used to repeat the palette's colours from its eleventh slice on).
export function colors(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(i < PALETTE.length ? PALETTE[i]
      : `hsl(${((i - PALETTE.length) * 137.508 + 15).toFixed(1)}, ${52 + (i % 3) * 14}%, ${40 + (i % 4) * 9}%)`);
  }
  return out;
}

const live = new Set();
const pending = [];

export function chartsAvailable() {
  return typeof window.Chart === 'function';
}

// Destroys every chart drawn so far (when a view is replaced).
export function destroyCharts() {
  for (const c of live) c.destroy();
  live.clear();
}

function textColor() {
  return getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#222';
}

// A canvas in a sized box with the chart, or a note when Chart.js is missing.
export function chart(config, { height = 260, id } = {}) {
  if (!chartsAvailable()) return note('unavailable', 'Charts unavailable (Chart.js was not bundled; run npm ci and rebuild).');
  const canvas = el('canvas', { 'aria-label': id || 'chart', role: 'img' });
  const box = el(`div.chart-box.h${height}`, { dataset: { chart: id || '' } }, canvas);
  // Heights computed from a row count have no .hN class in the style sheet; without a height
  // the box would leave Chart.js its 150 px canvas. (A CSSOM property, allowed by style-src 'self'.)
  box.style.height = `${height}px`;
  const fg = textColor();
  const base = {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    normalized: true,
    plugins: { legend: { labels: { color: fg, boxWidth: 12 } } },
  };
  const options = { ...base, ...config.options, plugins: { ...base.plugins, ...(config.options || {}).plugins } };
  for (const axis of Object.values(options.scales || {})) {
    axis.ticks = { color: fg, ...(axis.ticks || {}) };
    if (axis.title) axis.title.color = fg;
  }
  pending.push({ canvas, config: { ...config, options } });
  return box;
}

// Creates the charts whose canvases are now in the document (Chart.js needs their size). The
// app calls it after mounting a view; a view that swaps a chart in later calls it too.
export function mountCharts() {
  for (let i = pending.length - 1; i >= 0; i--) {
    const { canvas, config } = pending[i];
    pending.splice(i, 1);
    if (!canvas.isConnected) continue; // an abandoned render
    const c = new window.Chart(canvas, config);
    live.add(c);
    canvas.chart = c;
  }
}

export function msAxis(title) {
  return { beginAtZero: true, title: { display: true, text: title || 'ms' } };
}

// The chart's legend as a table: colour, type, share of self time, self time.
export function typeLegend(rows, cls) {
  const c = colors(rows.length);
  return el(`table.legend.${cls}`, null, el('tbody', null, rows.map((r, i) => el('tr', null,
    el('td', null, swatch(c[i])), el('td.name', null, r.name),
    el('td.num', null, fmtPct(r.percent)), el('td.num.muted', null, fmtUs(r.self_us))))));
}
