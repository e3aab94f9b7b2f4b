// SPDX-License-Identifier: MIT
// The REST API (docs/API.md). getJSON() throws an ApiError carrying the status and the API's
// error code, so a view can say "unavailable" for a route this daemon lacks (404 on an unknown
// route) and show every other failure as an error. A 401 (the daemon has an auth token and this
// browser no session yet) also fires "stepscope:unauthorized" on window: app.js then asks for the
// token and trades it for the session cookie (login()).

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

// DELETEs path; X-Requested-With is what the daemon asks of a DELETE (CSRF). null on 204.
export async function deleteJSON(path) {
  return answer(await fetch(path, {
    method: 'DELETE', headers: { Accept: 'application/json', 'X-Requested-With': 'stepscope' },
  }));
}

// Trades the auth token for the HttpOnly session cookie (POST /api/v1/session); throws an
// ApiError (401) for a wrong token.
export async function login(token) {
  const res = await fetch('/api/v1/session', {
    method: 'POST', headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (res.status === 401) throw new ApiError(401, 'unauthorized', 'wrong token');
  return answer(res);
}

async function answer(res) {
  if (res.status === 401) window.dispatchEvent(new Event('stepscope:unauthorized'));
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = body && body.error ? body.error : { code: res.statusText, message: '' };
    throw new ApiError(res.status, err.code, err.message || err.code);
  }
  return body;
}

// A route's answer as its bytes (its format=csv, for a download); a failure throws as getJSON's.
export async function getBlob(path) {
  const res = await fetch(path);
  return res.ok ? res.blob() : answer(res);
}

// Same as getJSON, but null for a 404 (a route this daemon does not have yet, or nothing published).
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
