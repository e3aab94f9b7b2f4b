// SPDX-License-Identifier: MIT
// The stepscope dashboard: a hash router over plain ES-module views, live updates from the
// daemon's Server-Sent Events (/api/v1/events), and the page state in the URL hash so a view can
// be shared or reloaded:
//
//   #/jobs?q=bert                       the jobs list (search)
//   #/job/3/overview?rank=0             a view of job 3 (overview, step-trace, operators,
//                                       queues, timeline, ranks, summary, tree, benchmark)
//
// A view module exports render(ctx) → Node (async); ctx.params is the hash's query, and
// ctx.set(params) updates it without a reload. When the stream says the open job changed, the
// view is rendered again off-screen and swapped in (at most once a second), unless the module
// exports live = false (the timeline keeps its zoom).
//
// With an auth token on the daemon, the first API answer is a 401: the page then asks for the
// token (a modal), trades it for the HttpOnly session cookie, reconnects the event stream and
// renders again. The token itself is never stored by the page.
import { getJSON, ApiError, login } from './api.js';
import { el, note } from './dom.js';
import { modal } from './dialog.js';
import { destroyCharts, mountCharts } from './charts.js';

// Views load on first use (dynamic import), so the first page fetches only its own modules.
const VIEWS = [
  ['overview', 'Overview', () => import('./views/overview.js')],
  ['step-trace', 'Step trace', () => import('./views/steptrace.js')],
  ['operators', 'Operators', () => import('./views/operators.js')],
  ['queues', 'Data queues', () => import('./views/queues.js')],
  ['timeline', 'Timeline', () => import('./views/timeline.js')],
  ['ranks', 'Ranks', () => import('./views/ranks.js')],
  ['cluster', 'Cluster', () => import('./views/cluster.js')],
  ['gpu', 'GPU', () => import('./views/gpu.js')],
  ['memory', 'Memory', () => import('./views/memory.js')],
  ['diff', 'Diff', () => import('./views/diff.js')],
  ['summary', 'Summaries', () => import('./views/summary.js')],
  ['tree', 'Hierarchy', () => import('./views/tree.js')],
  ['benchmark', 'Benchmark', () => import('./views/benchmark.js')],
];
const JOBS_VIEW = () => import('./views/jobs.js');
const REFRESH_MIN_MS = 1000;

const viewRoot = document.getElementById('view');
const nav = document.getElementById('nav');
const crumb = document.getElementById('crumb');
const rankBox = document.getElementById('rank-box');
const liveDot = document.getElementById('live');
const updated = document.getElementById('updated');

let token = 0;          // the latest render; older ones are dropped when they finish
let current = null;     // {route, job, jobInfo}
let lastRefresh = 0;
let refreshTimer = null;
let refreshes = 0;

export function parseHash(hash) {
  const h = (hash || '').replace(/^#\/?/, '');
  const [path, query] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  if (parts[0] === 'job' && parts[1]) {
    return { kind: 'job', job: parts[1], view: parts[2] || 'overview', params };
  }
  return { kind: 'jobs', params };
}

export function makeHash(route, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  const path = route.kind === 'job'
    ? `#/job/${encodeURIComponent(route.job)}/${route.view}` : '#/jobs';
  return qs ? `${path}?${qs}` : path;
}

function setParams(route, params) {
  // replaceState: typing in a search box should not flood the history.
  const hash = makeHash(route, params);
  if (hash !== location.hash) history.replaceState(null, '', hash);
  route.params = params;
}

function renderNav(route, jobInfo) {
  if (route.kind !== 'job') {
    nav.replaceChildren();
    crumb.replaceChildren(el('span', null, 'Jobs'));
    rankBox.replaceChildren();
    return;
  }
  const keep = route.params.rank !== undefined ? { rank: route.params.rank } : {};
  nav.replaceChildren(...VIEWS.map(([key, label]) => el('a.nav-item', {
    href: makeHash({ kind: 'job', job: route.job, view: key }, keep),
    'aria-current': key === route.view ? 'page' : null, dataset: { view: key },
  }, label)));
  // replaceChildren() turns a null into the text "null": an unknown job has no badge at all.
  const badge = jobInfo ? [el(`span.badge.${jobInfo.live ? 'on' : 'off'}`, null, jobInfo.live ? 'running' : 'finished')] : [];
  crumb.replaceChildren(
    el('a', { href: '#/jobs' }, 'Jobs'), ' / ',
    el('span.job-name', { title: `job ${jobInfo ? jobInfo.id : route.job}` }, jobInfo ? jobInfo.name : route.job),
    ...badge);
  const rankList = jobInfo && jobInfo.ranks_detail ? jobInfo.ranks_detail.map((r) => r.rank) : [];
  if (rankList.length > 1) {
    const sel = el('select#rank', { 'aria-label': 'rank', onchange: () => {
      location.hash = makeHash(route, { ...route.params, rank: sel.value });
    } }, rankList.map((r) => el('option', { value: r, selected: String(r) === String(route.params.rank ?? rankList[0]) }, `rank ${r}`)));
    rankBox.replaceChildren(el('label', null, 'Rank ', sel));
  } else {
    rankBox.replaceChildren(rankList.length ? el('span.muted', null, `rank ${rankList[0]}`) : '');
  }
}

async function render({ quiet = false } = {}) {
  const my = ++token;
  const route = parseHash(location.hash);
  let jobInfo = null;
  let load = JOBS_VIEW;
  if (route.kind === 'job') {
    const entry = VIEWS.find(([k]) => k === route.view);
    if (!entry) {
      route.view = 'overview';
    }
    load = (entry || VIEWS[0])[2];
  }
  let module = null;
  if (!quiet) {
    viewRoot.setAttribute('aria-busy', 'true');
    if (!current || current.route.kind !== route.kind || current.route.view !== route.view || current.route.job !== route.job) {
      destroyCharts();
      viewRoot.replaceChildren(note('loading', 'Loading…'));
    }
  }
  let node;
  try {
    const [mod, info] = await Promise.all([load(),
      route.kind === 'job' ? getJSON(`/api/v1/jobs/${encodeURIComponent(route.job)}`) : null]);
    module = mod;
    if (route.kind === 'job') {
      jobInfo = info;
      if (route.params.rank === undefined && jobInfo.ranks_detail && jobInfo.ranks_detail.length) {
        route.params.rank = String(jobInfo.ranks_detail[0].rank);
      }
    }
    const ctx = {
      route,
      job: jobInfo ? String(jobInfo.id) : null,
      jobInfo,
      params: { ...route.params },
      rank: route.params.rank,
      set: (p) => setParams(route, p),
      go: (hash) => { location.hash = hash; },
      hashFor: (view, params) => makeHash({ kind: 'job', job: route.job, view }, params),
      refresh: () => render({ quiet: true }),
    };
    node = await module.render(ctx);
  } catch (e) {
    const msg = e instanceof ApiError && e.status === 404 && route.kind === 'job'
      ? `No job "${route.job}".` : `Cannot load this view: ${e.message}`;
    node = note('error', msg);
    console.warn(e);
  }
  if (my !== token) return; // a newer render started meanwhile
  renderNav(route, jobInfo);
  destroyCharts();
  viewRoot.replaceChildren(node);
  viewRoot.removeAttribute('aria-busy');
  viewRoot.dataset.view = route.kind === 'job' ? route.view : 'jobs';
  viewRoot.dataset.renders = String(++refreshes);
  mountCharts();
  current = { route, jobInfo, module };
  lastRefresh = Date.now();
  updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
}

// A live event: refresh the open view if it shows that job (or the jobs list), at most once
// per REFRESH_MIN_MS.
function onJobChanged(jobId) {
  if (!current) return;
  const { route, jobInfo, module } = current;
  const mine = route.kind === 'jobs' || (jobInfo && String(jobInfo.id) === String(jobId));
  if (!mine || !module || module.live === false) return;
  if (refreshTimer) return;
  const wait = Math.max(0, REFRESH_MIN_MS - (Date.now() - lastRefresh));
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    render({ quiet: true });
  }, wait);
}

let events = null;

function connectEvents() {
  if (typeof EventSource !== 'function') return;
  if (events) events.close();
  const es = new EventSource('/api/v1/events');
  events = es;
  const state = (s, text) => {
    liveDot.dataset.state = s;
    liveDot.textContent = text;
    liveDot.title = s === 'on' ? 'Live: the page updates as the daemon receives data' : 'Not connected to the live stream; retrying';
  };
  es.addEventListener('hello', () => state('on', 'live'));
  es.addEventListener('ping', () => state('on', 'live'));
  es.addEventListener('job', (ev) => {
    state('on', 'live');
    try {
      onJobChanged(JSON.parse(ev.data).job);
    } catch (e) {
      console.warn('bad event', e);
    }
  });
  es.onerror = () => state('off', 'offline');
}

// The token prompt, once however many requests answered 401.
function askToken() {
  if (document.getElementById('auth')) return;
  const input = el('input#auth-token', { type: 'password', autocomplete: 'current-password', required: true, 'aria-label': 'auth token' });
  modal({
    id: 'auth', title: 'This daemon needs its auth token', submit: 'Sign in', cancel: null,
    body: [el('p.muted', null, 'Enter the token the daemon was started with (auth_token). The browser keeps an HttpOnly session cookie for /api; the page never stores the token.'),
      el('label.auth-label', null, 'Token ', input)],
    onSubmit: async () => {
      await login(input.value);
      connectEvents();
      render();
      return true;
    },
  });
  input.focus();
}

async function showVersion() {
  try {
    const h = await getJSON('/api/v1/health');
    document.getElementById('version').textContent = `v${h.version}`;
  } catch (e) {
    document.getElementById('version').textContent = 'daemon unreachable';
  }
}

window.addEventListener('hashchange', () => render());
window.addEventListener('stepscope:unauthorized', askToken);
showVersion();
connectEvents();
render();
