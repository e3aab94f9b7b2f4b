// SPDX-License-Identifier: MIT
// The REST API (docs/API.md). getJSON() throws an ApiError carrying the status and the API's
// error code, so a view can say "unavailable" for a route this daemon lacks (404 on an unknown
// route) and show every other failure as an error.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

export async function getJSON(path, { signal } = {}) {
  return answer(await fetch(path, { headers: { Accept: 'application/json' }, signal }));
}

// POSTs obj as JSON (the one route that takes a body: captures); the answer as getJSON's.
export async function postJSON(path, obj) {
  return answer(await fetch(path, {
    method: 'POST', headers: { Accept: 'application/json', 'Content-Type': 'application/json' }, body: JSON.stringify(obj),
  }));
}

async function answer(res) {
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = body && body.error ? body.error : { code: res.statusText, message: '' };
    throw new ApiError(res.status, err.code, err.message || err.code);
  }
  return body;
}

// Same, but null for a 404 (a route this daemon does not have yet, or nothing published).
export async function getOptional(path, opts) {
  try {
    return await getJSON(path, opts);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

export function jobPath(job, route, params) {
  let p = `/api/v1/jobs/${encodeURIComponent(job)}${route ? `/${route}` : ''}`;
  if (params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    const s = q.toString();
    if (s) p += `?${s}`;
  }
  return p;
}

// Whether this daemon serves a route (its OpenAPI document lists it), so a view of a route other
// parts of the daemon add can say "unavailable" without a failing request. template is the
// OpenAPI path ("/api/v1/jobs/{job}/benchmark").
let routes = null;
export async function hasRoute(template) {
  if (!routes) {
    routes = getJSON('/api/v1/openapi.json').then((d) => new Set(Object.keys(d.paths || {})))
      .catch((e) => { routes = null; throw e; });
  }
  return (await routes).has(template);
}
