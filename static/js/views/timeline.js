// SPDX-License-Identifier: MIT
// Timeline (seed 001, Figure 7): the download of the whole job (a Chrome trace Perfetto and
// chrome://tracing load), and an in-page view of one step of one rank: each (process, thread)
// is a row of the canvas, nested spans stack inside it; W/S zoom in and out, A/D pan (as in
// chrome://tracing), the mouse wheel zooms too; a click on a span shows its name, times and
// args. The step's trace comes from /timeline?ranks=R&step=N, capped at MAX_BYTES; without a
// step in the address it opens on the last step with spans (/steps?with_spans=1). A rank without
// steps (a MindSpore timeline, a bare trace) is browsed by time window instead: from/to in ms
// after the rank's first event (ranks_detail trace_start_us/trace_end_us), the whole trace by
// default. Rows are labelled by the trace's own thread_name/process_name metadata, else by
// pid/tid. Below it, the "Capture N steps" control (capture.js) asks the running job for
// detailed steps.
//
// CPU→GPU links: a selected runtime launch (cudaLaunchKernel, cudaMemcpyAsync...) gets an arrow
// to the kernel or copy it launched, and a selected kernel to its launch; the details name the
// other end with its duration and the launch delay (HTA's: kernel start − launch end). The link
// is the trace's flow pair (ph "s" on the launch, "f" on the kernel, one cat and id, as Kineto's
// "ac2g"), bound as chrome://tracing binds it (the deepest span enclosing the end's ts; an "f"
// without bp "e" the next span on its thread), else the two spans' shared args.correlation. A
// pair with one end outside the step's window says so, and "Find it" looks for that end in the
// window as long just after (before) this one.
import { getJSON, jobPath } from '../api.js';
import { el, card, note, fmtUs, fmtNum } from '../dom.js';
import { captureControl } from '../capture.js';
import { dataTable } from '../table.js';

export const live = false; // a live refresh would reset the zoom; the step's data is fixed

const MAX_BYTES = 16 * 1024 * 1024;
const LANE = 18;
const ROW_GAP = 6;
const LABEL_W = 190;
const LABEL_CHARS = 30;
const AXIS_H = 22;

function colorFor(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360}, 55%, 62%)`;
}

// Rows of spans by (pid, tid) with their nesting depth, from a Chrome trace document.
export function buildRows(doc) {
  const names = new Map();
  const spans = new Map();
  const flows = [];
  for (const e of doc.traceEvents || []) {
    const key = `${e.pid}\u0000${e.tid}`;
    if ((e.ph === 's' || e.ph === 'f') && typeof e.ts === 'number' && e.id !== undefined) {
      flows.push({ ph: e.ph, key, ts: e.ts, cat: e.cat, flowId: e.id, bp: e.bp });
      continue;
    }
    if (e.ph === 'M') {
      if (e.name === 'thread_name' && e.args) names.set(key, String(e.args.name));
      if (e.name === 'process_name' && e.args) names.set(`${e.pid}\u0000`, String(e.args.name));
      continue;
    }
    if (e.ph !== 'X' || typeof e.ts !== 'number') continue;
    if (!spans.has(key)) spans.set(key, []);
    spans.get(key).push({ name: String(e.name ?? ''), cat: e.cat, ts: e.ts, dur: Number(e.dur) || 0, pid: e.pid, tid: e.tid, args: e.args, depth: 0, link: null, linkOut: null });
  }
  const rows = [];
  for (const [key, list] of spans) {
    list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    const ends = [];
    let depth = 0;
    for (const s of list) {
      while (ends.length && ends[ends.length - 1] <= s.ts) ends.pop();
      s.depth = ends.length;
      ends.push(s.ts + s.dur);
      depth = Math.max(depth, s.depth + 1);
    }
    const [pid, tid] = key.split('\u0000');
    const proc = names.get(`${pid}\u0000`);
    const thread = names.get(key);
    // The thread's own name when the trace gives one (Kineto's "thread 4515 (python)", "stream 7"),
    // else the process and tid; the full pair is on the row's title.
    const label = thread || `${proc || `pid ${pid}`} · tid ${tid}`;
    rows.push({ pid, tid, label, title: `${proc || `pid ${pid}`} · ${thread || `tid ${tid}`}`, spans: list, depth });
  }
  rows.sort((a, b) => String(a.pid).localeCompare(String(b.pid), 'en', { numeric: true }) || String(a.tid).localeCompare(String(b.tid), 'en', { numeric: true }));
  linkSpans(spans, flows);
  return rows;
}

const GPU_CATS = new Set(['kernel', 'gpu_memcpy', 'gpu_memset', 'Kernel', 'Memcpy', 'Memset']);
const LAUNCH_CATS = new Set(['cuda_runtime', 'cuda_driver', 'Runtime', 'Driver']);

// The span a flow end binds to on its thread (list sorted by ts, longest first): the deepest span
// enclosing ts, or for an "f" without bp "e" the first span starting at or after ts.
function bindFlow(list, f) {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) { // first span with ts > f.ts
    const mid = (lo + hi) >> 1;
    if (list[mid].ts <= f.ts) lo = mid + 1; else hi = mid;
  }
  if (f.ph === 'f' && f.bp !== 'e') return list[lo] || null;
  // Back from the last span starting at or before ts: the first that encloses it is the deepest.
  // Spans of depth 0 do not overlap, so none before one of them can enclose ts.
  for (let i = lo - 1; i >= 0; i--) {
    if (list[i].ts + list[i].dur >= f.ts) return list[i];
    if (list[i].depth === 0) return null;
  }
  return null;
}

// Whether a flow end on span s is a CPU→GPU link's: Kineto's ac2g, or a flow of another
// category from a launch or on a device span (not fwdbwd, which links a forward operator to its
// backward).
function launchFlow(f, s) {
  return f.cat === 'ac2g' || LAUNCH_CATS.has(s.cat) || GPU_CATS.has(s.cat);
}

// Sets span.link (the span at the other end, with the flow's id) on both ends of each CPU→GPU
// flow pair, span.linkOut on a span whose pair's other end is not in the document, then links
// the launches and device spans left by their shared args.correlation.
function linkSpans(spans, flows) {
  const ends = new Map(); // cat -> id -> {s, f}
  for (const f of flows) {
    const list = spans.get(f.key);
    const s = list ? bindFlow(list, f) : null;
    if (!s || !launchFlow(f, s)) continue;
    let byId = ends.get(f.cat);
    if (!byId) ends.set(f.cat, (byId = new Map()));
    let pair = byId.get(f.flowId);
    if (!pair) byId.set(f.flowId, (pair = { s: null, f: null }));
    pair[f.ph] = { span: s, flowId: f.flowId, cat: f.cat };
  }
  for (const { s, f } of [...ends.values()].flatMap((m) => [...m.values()])) {
    if (s && f && s.span !== f.span) {
      s.span.link = { span: f.span, id: s.flowId, by: 'flow' };
      f.span.link = { span: s.span, id: s.flowId, by: 'flow' };
    } else if (s || f) {
      const end = s || f;
      if (!end.span.link) end.span.linkOut = { id: end.flowId, cat: end.cat, side: s ? 'launch' : 'device' };
    }
  }
  const launches = new Map();
  for (const list of spans.values()) {
    for (const s of list) {
      const c = s.args && s.args.correlation;
      if (c !== undefined && LAUNCH_CATS.has(s.cat) && !s.link) launches.set(String(c), s);
    }
  }
  for (const list of spans.values()) {
    for (const s of list) {
      const c = s.args && s.args.correlation;
      if (c === undefined || !GPU_CATS.has(s.cat) || s.link) continue;
      const l = launches.get(String(c));
      if (!l || l.link) continue;
      l.link = { span: s, id: c, by: 'correlation' };
      s.link = { span: l, id: c, by: 'correlation' };
      l.linkOut = null;
      s.linkOut = null;
    }
  }
}

// The launch and device ends of a link: the one that starts first launched the other.
function launchEnds(a, b) {
  return a.ts <= b.ts ? [a, b] : [b, a];
}

// win: [start, end] µs to open on (the step's or the chosen window; spans that reach outside it,
// such as a profiler's whole-run span, are there to pan to); else the spans' extent.
// more(start_us, end_us): the rank's trace in another window (to find a link's other end).
function viewer(rows, info, win, more) {
  let top = AXIS_H;
  for (const r of rows) {
    r.top = top;
    top += r.depth * LANE + ROW_GAP;
  }
  const height = top + 4;
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const r of rows) for (const s of r.spans) { t0 = Math.min(t0, s.ts); t1 = Math.max(t1, s.ts + s.dur); }
  if (win && win[1] > win[0]) [t0, t1] = win;
  if (!(t1 > t0)) t1 = t0 + 1;
  const full = [t0, t1];
  const canvas = el('canvas#timeline-canvas', { tabindex: 0, 'aria-label': 'timeline: W/S zoom, A/D pan, click a span' });
  const details = el('div.span-details', { dataset: { details: '' } }, note('info', 'Click a span to see its name, times and args.'));
  const hint = el('p.muted.small', null, 'W/S zoom · A/D pan · wheel zooms · click a span for details');
  let selected = null;
  const rowOf = new Map();
  for (const r of rows) for (const s of r.spans) rowOf.set(s, r);

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(400, canvas.parentElement ? canvas.parentElement.clientWidth : 900);
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    canvas.dataset.t0 = String(t0);
    canvas.dataset.t1 = String(t1);
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue('--fg').trim() || '#222';
    const grid = css.getPropertyValue('--line').trim() || '#ccc';
    g.clearRect(0, 0, width, height);
    g.font = '11px system-ui, sans-serif';
    const w = width - LABEL_W;
    const x = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * w;
    // Axis: five ticks relative to the step's start.
    g.fillStyle = fg;
    g.strokeStyle = grid;
    for (let i = 0; i <= 5; i++) {
      const t = t0 + ((t1 - t0) * i) / 5;
      const px = x(t);
      g.beginPath();
      g.moveTo(px, AXIS_H - 4);
      g.lineTo(px, height);
      g.stroke();
      g.fillText(`+${fmtUs(t - full[0])}`, Math.min(px + 2, width - 60), 12);
    }
    let drawn = 0;
    for (const r of rows) {
      g.fillStyle = fg;
      g.fillText(r.label.slice(0, LABEL_CHARS), 4, r.top + 13);
      g.save();
      g.beginPath();
      g.rect(LABEL_W, r.top, w, r.depth * LANE);
      g.clip();
      for (const s of r.spans) {
        if (s.ts > t1 || s.ts + s.dur < t0) continue;
        const x0 = x(s.ts);
        const sw = Math.max(1, x(s.ts + s.dur) - x0);
        const y = r.top + s.depth * LANE;
        g.fillStyle = s === selected ? '#222' : colorFor(s.name);
        g.fillRect(x0, y, sw, LANE - 2);
        drawn++;
        if (sw > 30) {
          g.fillStyle = s === selected ? '#fff' : '#111';
          g.save();
          g.beginPath();
          g.rect(x0, y, sw, LANE - 2);
          g.clip();
          g.fillText(s.name, Math.max(x0, LABEL_W) + 3, y + 12);
          g.restore();
        }
      }
      g.restore();
    }
    drawLink(g, x);
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.labels = JSON.stringify(rows.map((r) => r.label));
    canvas.dataset.rows = JSON.stringify(rows.map((r) => ({ pid: r.pid, tid: r.tid, top: r.top, lanes: r.depth })));
  }

  // The selected span's link: an arrow from the launch's start to the device span's start (as
  // Perfetto draws a flow), its ends in canvas.dataset.link.
  function drawLink(g, x) {
    delete canvas.dataset.link;
    if (!selected || !selected.link) return;
    const [l, d] = launchEnds(selected, selected.link.span);
    if (selected.link.outside) return;
    const rl = rowOf.get(l);
    const rd = rowOf.get(d);
    if (!rl || !rd) return;
    const x0 = x(l.ts);
    const y0 = rl.top + l.depth * LANE + (LANE - 2) / 2;
    const x1 = x(d.ts);
    const y1 = rd.top + d.depth * LANE + (LANE - 2) / 2;
    g.save();
    g.strokeStyle = '#c0392b';
    g.fillStyle = '#c0392b';
    g.lineWidth = 2;
    g.beginPath();
    g.moveTo(x0, y0);
    g.lineTo(x1, y1);
    g.stroke();
    const a = Math.atan2(y1 - y0, x1 - x0);
    g.beginPath();
    g.moveTo(x1, y1);
    g.lineTo(x1 - 9 * Math.cos(a - 0.4), y1 - 9 * Math.sin(a - 0.4));
    g.lineTo(x1 - 9 * Math.cos(a + 0.4), y1 - 9 * Math.sin(a + 0.4));
    g.closePath();
    g.fill();
    g.restore();
    const end = (s) => ({ name: s.name, ts: s.ts, dur: s.dur, pid: s.pid, tid: s.tid });
    canvas.dataset.link = JSON.stringify({ id: selected.link.id, by: selected.link.by, from: end(l), to: end(d), x0, y0, x1, y1 });
  }

  function zoom(factor, at) {
    const c = at ?? (t0 + t1) / 2;
    const span = Math.max(0.01, (t1 - t0) * factor);
    const frac = (c - t0) / (t1 - t0);
    t0 = c - span * frac;
    t1 = t0 + span;
    draw();
  }

  function pan(frac) {
    const d = (t1 - t0) * frac;
    t0 += d;
    t1 += d;
    draw();
  }

  function show(s) {
    selected = s;
    draw();
    if (!s) {
      details.replaceChildren(note('info', 'No span there.'));
      return;
    }
    details.replaceChildren(el('h4', { dataset: { span: s.name } }, s.name),
      el('dl.points', null,
        el('dt', null, 'start'), el('dd', null, `+${fmtUs(s.ts - full[0])} (ts ${s.ts} µs)`),
        el('dt', null, 'duration'), el('dd', { dataset: { field: 'dur' } }, fmtUs(s.dur)),
        el('dt', null, 'end'), el('dd', null, `+${fmtUs(s.ts + s.dur - full[0])}`),
        el('dt', null, 'category'), el('dd', null, s.cat ?? '—'),
        el('dt', null, 'pid / tid'), el('dd', null, `${s.pid} / ${s.tid}`),
        ...linkFields(s)),
      el('pre.args', null, s.args === undefined ? 'no args' : JSON.stringify(s.args, null, 2)));
  }

  // The details of s's link: the span at its other end (a button that selects it), its duration,
  // and the launch delay; or that the other end lies outside this window.
  function linkFields(s) {
    if (s.link) {
      const o = s.link.span;
      const [l, d] = launchEnds(s, o);
      const delay = d.ts - (l.ts + l.dur);
      const go = s.link.outside
        ? el('span', { dataset: { linked: o.name } }, o.name)
        : el('button.btn.link', { type: 'button', dataset: { linked: o.name }, onclick: () => show(o) }, o.name);
      return [
        el('dt', null, o === d ? 'launched' : 'launched by'),
        el('dd', { dataset: { field: 'linked', linkId: String(s.link.id), by: s.link.by } }, go,
          ` (${fmtUs(o.dur)}, ${o.pid} / ${o.tid}; ${s.link.by === 'flow' ? 'flow' : 'correlation'} ${s.link.id}${s.link.outside ? `; at +${fmtUs(o.ts - full[0])}, outside this window` : ''})`),
        el('dt', { title: "HTA's launch delay: the device span's start less the launch's end" }, 'launch delay'),
        el('dd', { dataset: { field: 'launch-delay', us: String(delay) } }, fmtUs(delay)),
      ];
    }
    if (s.linkOut) {
      return [el('dt', null, s.linkOut.side === 'launch' ? 'launched' : 'launched by'),
        el('dd', { dataset: { field: 'linked-out', linkId: String(s.linkOut.id) } }, `outside this window (flow ${s.linkOut.id}) `,
          more ? el('button.btn', { type: 'button', dataset: { find: '' }, onclick: (ev) => findOut(s, ev.target.parentElement) }, 'Find it') : null)];
    }
    return [];
  }

  // Looks for the other end of s's link in the window as long as this one just after it (s is a
  // launch) or just before it (s is a device span), then shows s with it.
  async function findOut(s, dd) {
    const out = s.linkOut;
    const len = full[1] - full[0];
    const after = out.side === 'launch';
    const [a, b] = after ? [full[1], full[1] + len] : [full[0] - len, full[0]];
    dd.replaceChildren(`looking ${fmtUs(len)} ${after ? 'after' : 'before'} this window…`);
    let doc;
    try {
      doc = await more(Math.floor(a), Math.ceil(b));
    } catch (e) {
      dd.replaceChildren(`outside this window (flow ${out.id}); could not load the next window: ${e.message}`);
      return;
    }
    const fe = ((doc && doc.traceEvents) || []).find((e) => e.ph === (after ? 'f' : 's') && e.cat === out.cat && String(e.id) === String(out.id));
    const row = fe ? buildRows(doc).find((r) => r.pid === String(fe.pid) && r.tid === String(fe.tid)) : null;
    const o = row ? bindFlow(row.spans, fe) : null;
    if (!o) {
      dd.replaceChildren(`outside this window (flow ${out.id}), and not in the ${fmtUs(len)} ${after ? 'after' : 'before'} it`);
      return;
    }
    s.link = { span: o, id: out.id, by: 'flow', outside: true };
    s.linkOut = null;
    if (selected === s) show(s);
  }

  canvas.addEventListener('click', (ev) => {
    const rect = canvas.getBoundingClientRect();
    const px = ev.clientX - rect.left;
    const py = ev.clientY - rect.top;
    if (px < LABEL_W) return;
    const t = t0 + ((px - LABEL_W) / (rect.width - LABEL_W)) * (t1 - t0);
    const tol = ((t1 - t0) / (rect.width - LABEL_W)) * 2;
    const r = rows.find((row) => py >= row.top && py < row.top + row.depth * LANE);
    if (!r) return show(null);
    const depth = Math.floor((py - r.top) / LANE);
    return show(r.spans.find((s) => s.depth === depth && s.ts - tol <= t && t <= s.ts + s.dur + tol) || null);
  });
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const rect = canvas.getBoundingClientRect();
    const at = t0 + ((ev.clientX - rect.left - LABEL_W) / (rect.width - LABEL_W)) * (t1 - t0);
    zoom(ev.deltaY < 0 ? 0.8 : 1.25, at);
  }, { passive: false });
  const onKey = (ev) => {
    if (!canvas.isConnected) {
      document.removeEventListener('keydown', onKey);
      window.removeEventListener('resize', draw);
      return;
    }
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const k = ev.key.toLowerCase();
    if (k === 'w') zoom(0.7);
    else if (k === 's') zoom(1 / 0.7);
    else if (k === 'a') pan(-0.15);
    else if (k === 'd') pan(0.15);
    else if (k === '0') { [t0, t1] = full; draw(); }
    else return;
    ev.preventDefault();
  };
  document.addEventListener('keydown', onKey);
  window.addEventListener('resize', draw);
  // First draw once the canvas is in the page (its width comes from the card).
  requestAnimationFrame(() => { if (canvas.isConnected) draw(); });
  const reset = el('button.btn', { type: 'button', onclick: () => { [t0, t1] = full; draw(); } }, 'Reset zoom');
  return el('div.timeline', null, el('div.timeline-bar', null, hint, reset, info), el('div.canvas-wrap', null, canvas), details);
}

// The last step of rank with spans, and how many of its steps have spans: {step, with, total}.
async function stepsWithSpans(ctx, rank) {
  const all = await getJSON(jobPath(ctx.job, 'steps', { rank, limit: 1 }));
  const w = await getJSON(jobPath(ctx.job, 'steps', { rank, limit: 1, with_spans: 1 }));
  let step = '';
  if (w.total) {
    const last = await getJSON(jobPath(ctx.job, 'steps', { rank, with_spans: 1, offset: w.total - 1, limit: 1 }));
    step = last.rows.length ? String(last.rows[0].step) : '';
  }
  return { step, with: w.total, total: all.total };
}

function traceView(doc, what, win, more) {
  const rows = doc ? buildRows(doc) : [];
  if (!rows.length) return note('empty', `No spans in ${what}.`);
  const od = doc.otherData || {};
  const count = rows.reduce((n, r) => n + r.spans.length, 0);
  const info = el('span.muted.small', { dataset: { spans: count } },
    `${fmtNum(count)} spans on ${rows.length} threads${od.truncated ? `; cut at ${fmtNum(MAX_BYTES)} bytes (${fmtNum(od.cut_events)} events left out)` : ''}`);
  const w = win || ((od.windows || [])[0] ? [od.windows[0].start_us, od.windows[0].end_us] : null);
  return viewer(rows, info, w, more);
}

async function fetchTrace(ctx, params) {
  try {
    return await getJSON(jobPath(ctx.job, 'timeline', { ...params, max_bytes: MAX_BYTES }));
  } catch (e) {
    if (e.status !== 404) throw e;
    return null;
  }
}

// A rank without steps: a window [from, to] in ms after the rank's first event.
async function windowPage(ctx, rank, dl) {
  const job = await getJSON(jobPath(ctx.job));
  const rk = (job.ranks_detail || []).find((r) => String(r.rank) === String(rank));
  const t0 = rk ? rk.trace_start_us : null;
  const t1 = rk ? rk.trace_end_us : null;
  if (t0 === null || t0 === undefined) {
    return { title: 'Timeline', body: el('div', null, dl, note('empty', `No timed events on rank ${rank} yet.`)) };
  }
  const span = Math.max(0, t1 - t0);
  const num = (v, def) => (v === undefined || v === '' || !Number.isFinite(Number(v)) ? def : Number(v));
  const from = Math.min(Math.max(0, num(ctx.params.from, 0)), span / 1000);
  const to = Math.min(Math.max(from, num(ctx.params.to, span / 1000)), span / 1000);
  const fromIn = el('input#tl-from', { type: 'number', min: 0, step: 'any', value: String(from), 'aria-label': 'from, ms' });
  const toIn = el('input#tl-to', { type: 'number', min: 0, step: 'any', value: String(to), 'aria-label': 'to, ms' });
  const form = el('form.controls', { dataset: { window: '' }, onsubmit: (e) => { e.preventDefault(); ctx.go(ctx.hashFor('timeline', { rank, from: fromIn.value, to: toIn.value })); } },
    el('label', null, 'From ', fromIn, ' ms'), el('label', null, ' to ', toIn, ' ms'), el('button.btn', { type: 'submit' }, 'Show'));
  const start = t0 + from * 1000;
  const end = t0 + to * 1000;
  const doc = await fetchTrace(ctx, { ranks: rank, start_us: Math.floor(start), end_us: Math.ceil(end) });
  const about = el('p.muted.small', { dataset: { traceWindow: `${t0},${t1}` } },
    `Rank ${rank} has no steps: browse its trace by time. It runs ${fmtUs(span)} (ts ${t0} to ${t1} µs); showing ${fmtNum(from)} to ${fmtNum(to)} ms.`);
  return { title: `Timeline: rank ${rank}, ${fmtNum(from)}–${fmtNum(to)} ms`, actions: form, body: el('div', null, dl, about, traceView(doc, `this window of rank ${rank}`, [start, end], (a, b) => fetchTrace(ctx, { ranks: rank, start_us: a, end_us: b }))) };
}

// The captures made on this job (GET /captures: from this page, the CLI or the API), whether it
// still runs or not: per capture its window of a series, what it recorded, its state and each
// rank's captured steps, with a link to the timeline of the first of them.
async function capturesMade(ctx) {
  const doc = await getJSON(jobPath(ctx.job, 'captures'));
  if (!doc.captures.length) return null;
  const parts = (c) => el('span', null, c.ranks.map((p, i) => [i ? '; ' : '',
    `rank ${p.rank} ${p.state}`, p.first_step !== null && p.first_step !== undefined
      ? ` (steps ${p.first_step}–${p.last_step})` : '', p.reason && p.reason !== p.state ? `: ${p.reason}` : '']));
  const link = (c) => {
    const p = c.ranks.find((x) => x.state === 'done' && String(x.rank) === String(ctx.rank) && x.first_step !== null)
      || c.ranks.find((x) => x.state === 'done' && x.first_step !== null);
    return p ? el('a', { href: ctx.hashFor('timeline', { rank: p.rank, step: p.first_step }), dataset: { captureLink: c.id } }, `step ${p.first_step}`) : '—';
  };
  const columns = [
    { key: 'id', label: 'capture', num: true },
    { key: 'window', label: 'window', fmt: (v, c) => (c.repeat > 1 ? `${v + 1} of ${c.repeat} (every ${c.every})` : '—') },
    { key: 'steps', label: 'steps asked', num: true },
    { key: 'what', label: 'what', fmt: (v) => v.join(', ') },
    { key: 'state', label: 'state' },
    { key: 'ranks', label: 'ranks', fmt: (v, c) => parts(c) },
    { key: 'link', label: 'timeline', fmt: (v, c) => link(c) },
  ];
  return card('Captures of this job', { id: 'captures', cls: 'wide' },
    el('p.muted', null, 'Every capture asked of this job (here, by stepscope capture or by POST /captures), oldest first, with the steps each rank recorded.'),
    dataTable({ id: 'captures', columns, rows: doc.captures, pageSize: 20 }));
}

export async function render(ctx) {
  const { rank } = ctx;
  let step = ctx.params.step;
  let counts = null;
  if (!step) {
    counts = await stepsWithSpans(ctx, rank);
    step = counts.step;
  }
  const dlWhole = el('a.btn', { href: jobPath(ctx.job, 'timeline'), download: `${ctx.job}.trace.json`, dataset: { download: 'timeline' } }, 'Download the whole trace');
  const capture = [card('Capture detailed steps', { id: 'capture', cls: 'wide' }, captureControl(ctx)),
    await capturesMade(ctx)];
  if (counts && counts.total === 0) {
    const dl = el('p', null, dlWhole, ' ', el('span.muted', null, 'Chrome trace JSON for ui.perfetto.dev or chrome://tracing.'));
    const w = await windowPage(ctx, rank, dl);
    return el('div.page', null, card(w.title, { id: 'timeline', cls: 'wide', actions: w.actions }, w.body), capture);
  }
  const input = el('input#tl-step', { type: 'number', min: 0, value: step || '', 'aria-label': 'step' });
  const controls = el('form.controls', { onsubmit: (e) => { e.preventDefault(); ctx.go(ctx.hashFor('timeline', { rank, step: input.value })); } },
    el('label', null, 'Step ', input), el('button.btn', { type: 'submit' }, 'Show'));
  const dl = el('p', null,
    dlWhole, ' ',
    step ? el('a.btn', { href: jobPath(ctx.job, 'timeline', { ranks: rank, step }), download: `${ctx.job}.step${step}.trace.json` }, `Download step ${step}`) : null, ' ',
    el('span.muted', null, 'Chrome trace JSON for ui.perfetto.dev or chrome://tracing.'));
  const which = counts
    ? el('p.muted.small', { dataset: { withSpans: counts.with } },
      counts.with
        ? `${fmtNum(counts.with)} of ${fmtNum(counts.total)} steps of rank ${rank} have spans; showing the last of them.`
        : `None of the ${fmtNum(counts.total)} steps of rank ${rank} has spans yet: capture some below.`)
    : null;
  let body;
  if (!step) {
    body = note('empty', counts && counts.total ? 'No step with spans yet: capture detailed steps below.' : 'No steps yet: choose a step once the job has some.');
  } else {
    body = traceView(await fetchTrace(ctx, { ranks: rank, step }), `step ${step} of rank ${rank}`, null, (a, b) => fetchTrace(ctx, { ranks: rank, start_us: a, end_us: b }));
  }
  return el('div.page', null, card(`Timeline${step ? `: step ${step}, rank ${rank}` : ''}`, { id: 'timeline', cls: 'wide', actions: controls }, dl, which, body),
    capture);
}
