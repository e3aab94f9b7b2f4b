// SPDX-License-Identifier: MIT
// The "Capture N steps" control (docs/API.md "Captures"): POSTs a capture of the next N steps of
// every rank of the job, then reads it back every POLL_MS and shows each rank's state (pending,
// armed, recording, done, failed or expired with the reason) until every rank's part has ended.
// Then it links to the timeline of the first captured step. Polling stops when the control
// leaves the page. A job with no running session cannot capture: the control says so instead of
// offering a button the daemon would refuse (409).
import { getJSON, postJSON, jobPath } from './api.js';
import { el, note } from './dom.js';

export const POLL_MS = 500;
const FINAL = new Set(['done', 'failed', 'expired']);
const STEPS_READ = 1000; // the rank's latest steps searched for the capture's first one

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

// Where a capture landed on rank: its start step when it named one; for "next", the first step
// that began at or after the capture was created (wall clock, µs), else the rank's latest step.
// null when the rank has no steps.
export async function capturedStep(job, rank, cap) {
  if (typeof cap.start === 'number') return cap.start;
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
  const done = cap.ranks.find((p) => p.state === 'done' && String(p.rank) === String(ctx.rank)) ||
    cap.ranks.find((p) => p.state === 'done');
  if (!done) return;
  const step = await capturedStep(ctx.job, done.rank, cap);
  if (step === null) return;
  status.appendChild(el('p', null, el('a#capture-link.btn', { href: ctx.hashFor('timeline', { rank: done.rank, step }) },
    `Timeline of the captured steps (from step ${step}, rank ${done.rank}) →`)));
}

export function captureControl(ctx) {
  if (ctx.jobInfo && !ctx.jobInfo.live) {
    return el('div.capture', null, note('unavailable',
      'This job has no running session (it has ended, or was imported): captures ask a running training process for steps, so there is nothing to ask.'));
  }
  const input = el('input#capture-steps', { type: 'number', min: 1, max: 1000, value: '3', 'aria-label': 'steps to capture' });
  const label = () => `Capture ${input.value || 'N'} steps`;
  const button = el('button#capture-go.btn', { type: 'submit' }, label());
  const status = el('div.capture-status', { 'aria-live': 'polite' });
  input.addEventListener('input', () => { button.textContent = label(); });
  const submit = async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      const cap = await postJSON(jobPath(ctx.job, 'captures'), { steps: Number(input.value), start: 'next' });
      await follow(ctx, cap, status, button);
    } catch (e) {
      status.replaceChildren(note('error', `Capture failed: ${e.message}`));
      button.disabled = false;
    }
  };
  return el('div.capture', null,
    el('form.controls', { onsubmit: submit }, el('label', null, 'Steps ', input), button),
    el('p.muted.small', null, 'Asks every connected rank to record the next steps with its profiler (PyTorch, Paddle, MindSpore, libstepscope) and stream them here.'),
    status);
}
