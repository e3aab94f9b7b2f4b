// SPDX-License-Identifier: MIT
// The "Capture N steps" control (docs/API.md "Captures"): POSTs a capture of the next N steps of
// every rank of the job, then reads it back every POLL_MS and shows each rank's state (pending,
// armed, recording, done, failed or expired with the reason) until every rank's part has ended.
// Then it links to the timeline of the first captured step. With Repeat R > 1 (and Every N, the
// steps from one window's start to the next's) it asks for a series of R windows, one capture
// each, follows every window of the series (GET /captures, by "series") with each window's steps
// and ranks, and offers "Cancel the rest" (POST /captures/{id}/cancel) while one has not ended.
// Polling stops when the control leaves the page. A job with no running session cannot capture: the control says so instead of
// offering a button the daemon would refuse (409).
import { getJSON, postJSON, jobPath } from './api.js';
import { el, note } from './dom.js';

export const POLL_MS = 500;
const FINAL = new Set(['done', 'failed', 'expired', 'cancelled']);
const STEPS_READ = 1000; // the rank's latest steps searched for the capture's first one

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

// Where a capture landed on rank: its start step when it named one; for "next", the first step
// that began at or after the capture was created (wall clock, µs), else the rank's latest step.
// null when the rank has no steps.
export async function capturedStep(job, rank, cap) {
  if (typeof cap.start === 'number') return cap.start;
  const part = cap.ranks.find((p) => String(p.rank) === String(rank));
  if (part && typeof part.first_step === 'number') return part.first_step;
  const head = await getJSON(jobPath(job, 'steps', { rank, limit: 1 }));
  if (!head.total) return null;
  const offset = Math.max(0, head.total - STEPS_READ);
  const page = await getJSON(jobPath(job, 'steps', { rank, offset, limit: STEPS_READ }));
  const hit = page.rows.find((r) => r.start_us >= cap.created_us);
  const row = hit || page.rows[page.rows.length - 1];
  return row ? row.step : null;
}

function partsList(cap) {
  return el('ul.plain.capture-ranks', null, cap.ranks.map((p) => el('li', { dataset: { rank: p.rank, state: p.state } },
    el('span.name', null, `rank ${p.rank}`), ': ', el('strong', null, p.state), p.reason ? ` (${p.reason})` : '')));
}

async function follow(ctx, cap, status, button) {
  const path = jobPath(ctx.job, `captures/${cap.id}`);
  for (;;) {
    const ended = cap.ranks.length > 0 && cap.ranks.every((p) => FINAL.has(p.state));
    const head = el('p.capture-head', { dataset: { capture: cap.id, state: cap.state } },
      `Capture #${cap.id} (${cap.steps} step${cap.steps === 1 ? '' : 's'}): `, el('strong', null, cap.state));
    status.replaceChildren(head, cap.ranks.length ? partsList(cap) : note('empty', 'Waiting for a rank to connect.'));
    if (ended) break;
    await sleep(POLL_MS);
    if (!status.isConnected) return;
    cap = await getJSON(path);
  }
  button.disabled = false;
  await linkSteps(ctx, cap, status, 'Timeline of the captured steps');
}

// A link to the timeline of cap's first step on a done rank (the selected one when it is).
async function linkSteps(ctx, cap, status, what) {
  const done = cap.ranks.find((p) => p.state === 'done' && String(p.rank) === String(ctx.rank)) ||
    cap.ranks.find((p) => p.state === 'done');
  if (!done) return;
  const step = await capturedStep(ctx.job, done.rank, cap);
  if (step === null) return;
  status.appendChild(el('p', null, el('a#capture-link.btn', { href: ctx.hashFor('timeline', { rank: done.rank, step }) },
    `${what} (from step ${step}, rank ${done.rank}) →`)));
}

const windowEnded = (cap) => cap.ranks.length > 0 && cap.ranks.every((p) => FINAL.has(p.state));

// The steps a window covers on its ranks ("steps 12–13"), when the daemon knows them.
function windowSteps(cap) {
  const firsts = [...new Set(cap.ranks.map((p) => p.first_step).filter((s) => typeof s === 'number'))];
  if (firsts.length !== 1) return '';
  return ` steps ${firsts[0]}–${firsts[0] + cap.steps - 1}`;
}

// A series: every window of it, until all have ended; "Cancel the rest" meanwhile.
async function followSeries(ctx, first, status, button) {
  const list = jobPath(ctx.job, 'captures');
  let wins = [first];
  const cancel = el('button#capture-cancel.btn', { type: 'button' }, 'Cancel the rest');
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await postJSON(jobPath(ctx.job, `captures/${first.series}/cancel`), {});
    } catch (e) {
      status.appendChild(note('error', `Cancel failed: ${e.message}`));
    }
  });
  for (;;) {
    const ended = wins.length === first.repeat && wins.every(windowEnded);
    const done = wins.filter((c) => c.state === 'done').length;
    const head = el('p.capture-head', { dataset: { series: first.series, state: ended ? 'ended' : 'running' } },
      `Series #${first.series} (${first.repeat} windows of ${first.steps} step${first.steps === 1 ? '' : 's'} every ${first.every}): `,
      el('strong', null, ended ? `${done} of ${first.repeat} done` : 'running'));
    const items = wins.map((c) => el('div.capture-window', { dataset: { capture: c.id, window: c.window, state: c.state } },
      el('p', null, `Window ${c.window + 1} of ${c.repeat}, capture #${c.id}${windowSteps(c)}: `, el('strong', null, c.state)),
      c.ranks.length ? partsList(c) : note('empty', 'Waiting for a rank to connect.')));
    status.replaceChildren(head, ...items, ...(ended ? [] : [el('p', null, cancel)]));
    if (ended) break;
    await sleep(POLL_MS);
    if (!status.isConnected) return;
    wins = (await getJSON(list)).captures.filter((c) => c.series === first.series);
  }
  button.disabled = false;
  await linkSteps(ctx, wins[0], status, 'Timeline of the first window');
}

export function captureControl(ctx) {
  if (ctx.jobInfo && !ctx.jobInfo.live) {
    return el('div.capture', null, note('unavailable',
      'This job has no running session (it has ended, or was imported): captures ask a running training process for steps, so there is nothing to ask.'));
  }
  const input = el('input#capture-steps', { type: 'number', min: 1, max: 1000, value: '3', 'aria-label': 'steps to capture' });
  const every = el('input#capture-every', { type: 'number', min: 1, max: 1000000, placeholder: 'steps', 'aria-label': 'steps from one window to the next' });
  const repeat = el('input#capture-repeat', { type: 'number', min: 1, max: 100, value: '1', 'aria-label': 'windows to capture' });
  const label = () => (Number(repeat.value) > 1
    ? `Capture ${input.value || 'N'} steps ×${repeat.value}`
    : `Capture ${input.value || 'N'} steps`);
  const button = el('button#capture-go.btn', { type: 'submit' }, label());
  const status = el('div.capture-status', { 'aria-live': 'polite' });
  input.addEventListener('input', () => { button.textContent = label(); });
  repeat.addEventListener('input', () => { button.textContent = label(); });
  const submit = async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      const body = { steps: Number(input.value), start: 'next' };
      if (repeat.value !== '' && Number(repeat.value) !== 1) body.repeat = Number(repeat.value);
      if (every.value !== '') body.every = Number(every.value);
      const cap = await postJSON(jobPath(ctx.job, 'captures'), body);
      if (cap.repeat > 1) await followSeries(ctx, cap, status, button);
      else await follow(ctx, cap, status, button);
    } catch (e) {
      status.replaceChildren(note('error', `Capture failed: ${e.message}`));
      button.disabled = false;
    }
  };
  return el('div.capture', null,
    el('form.controls', { onsubmit: submit }, el('label', null, 'Steps ', input),
      el('label', null, 'Every ', every), el('label', null, 'Repeat ', repeat), button),
    el('p.muted.small', null, 'Asks every connected rank to record the next steps with its profiler (PyTorch, Paddle, MindSpore, libstepscope) and stream them here. Repeat R windows, each starting Every N steps after the previous one (N ≥ steps; empty: back to back).'),
    status);
}
