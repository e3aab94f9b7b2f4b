// SPDX-License-Identifier: MIT
// Paddle's summaries: every kind of Profiler.summary(), as tables and as Paddle prints them. A
// route this daemon does not serve (not in its OpenAPI document) shows "unavailable" without a
// failing request.
import { getOptional, hasRoute, jobPath } from '../api.js';
import { el, card, note, tabs } from '../dom.js';
import { genericDoc, paddleText } from '../generic.js';

// paddle.profiler's Profiler.summary() tables (docs/API.md, "Paddle's summaries and benchmark").
const SUMMARY_KINDS = ['overview', 'model', 'distributed', 'operator', 'kernel', 'memory-manipulation', 'user-defined',
  'memory', 'device'];

export async function render(ctx) {
  const kind = SUMMARY_KINDS.includes(ctx.params.kind) ? ctx.params.kind : SUMMARY_KINDS[0];
  const bar = tabs(SUMMARY_KINDS.map((k) => [k, k]), kind, (k) => ctx.go(ctx.hashFor('summary', { rank: ctx.rank, kind: k })));
  if (!(await hasRoute('/api/v1/jobs/{job}/summary/{kind}'))) {
    return el('div.page', null, card('Summaries', { id: 'summary', cls: 'wide' }, note('unavailable', 'Summaries unavailable: this daemon has no /summary route.')));
  }
  const path = (fmt) => jobPath(ctx.job, `summary/${kind}`, { rank: ctx.rank, format: fmt });
  const [doc, text] = await Promise.all([getOptional(path()), paddleText(path('text'))]);
  // Paddle's Memory Summary counts Paddle's memory events (Allocate, Free, ReservedAllocate,
  // ReservedFree); a torch profile_memory window's [memory] events are the Memory page's.
  const why = doc && kind === 'memory' && doc.memory_events === 0
    ? el('p#summary-memory-why.note.empty', null, 'No Paddle memory event (Allocate, Free, ReservedAllocate, ReservedFree, from paddle.profiler with profile_memory=True) on this rank. The torch profiler\'s [memory] events (profile_memory=True) are on the ',
      el('a', { href: ctx.hashFor('memory', { rank: ctx.rank }) }, 'Memory page'), '.')
    : null;
  return el('div.page', null, bar,
    card(`Summary: ${kind}`, { id: 'summary', cls: 'wide' }, why,
      doc ? genericDoc(doc, `summary-${kind}`) : note('empty', `No steps in range for the ${kind} summary.`)),
    text ? card('As Paddle prints it', { id: 'summary-text', cls: 'wide' }, text) : null);
}
