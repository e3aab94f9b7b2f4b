// SPDX-License-Identifier: MIT
// stepscope dashboard (placeholder): fetches /api/v1/jobs and fills the jobs table. Every value
// from the API goes into the page through textContent or element properties, never innerHTML, so
// a job or host name cannot become markup. Refreshes every 5 seconds.

const REFRESH_MS = 5000;

function formatBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

function formatTime(us) {
  if (!us) return '';
  return new Date(us / 1000).toLocaleString();
}

function cell(row, text, cls) {
  const td = document.createElement('td');
  td.textContent = String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function renderJobs(jobs) {
  const table = document.getElementById('jobs');
  const tbody = table.tBodies[0];
  const status = document.getElementById('status');
  tbody.replaceChildren();
  for (const job of jobs) {
    const tr = document.createElement('tr');
    cell(tr, job.id, 'num');
    cell(tr, job.name);
    cell(tr, job.ranks, 'num');
    cell(tr, job.world_size, 'num');
    cell(tr, job.steps, 'num');
    cell(tr, job.events, 'num');
    cell(tr, formatBytes(job.stored_bytes), 'num');
    cell(tr, formatTime(job.last_seen_us));
    cell(tr, job.live ? 'live' : '', job.live ? 'live' : '');
    const td = cell(tr, '');
    const a = document.createElement('a');
    a.href = `/api/v1/jobs/${encodeURIComponent(job.id)}/timeline`;
    a.textContent = 'download';
    td.appendChild(a);
    tbody.appendChild(tr);
  }
  table.hidden = jobs.length === 0;
  status.textContent = jobs.length === 0 ? 'No jobs yet.' : '';
}

async function getJSON(path) {
  const res = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const msg = body && body.error ? body.error.message : res.statusText;
    throw new Error(`${res.status} ${msg}`);
  }
  return body;
}

async function refresh() {
  try {
    const data = await getJSON('/api/v1/jobs');
    renderJobs(Array.isArray(data.jobs) ? data.jobs : []);
  } catch (err) {
    document.getElementById('status').textContent = `Cannot load jobs: ${err.message}`;
  }
}

async function showVersion() {
  try {
    const h = await getJSON('/api/v1/health');
    document.getElementById('version').textContent = `v${h.version}`;
  } catch {
    // The version is decoration; the jobs table reports errors.
  }
}

showVersion();
refresh();
setInterval(refresh, REFRESH_MS);
