// SPDX-License-Identifier: MIT
// DOM helpers. Every string from the API enters the page as a text node (textContent) or an
// element property, never as markup: there is no innerHTML anywhere in the dashboard.

// el('div#id.card.wide', {title: 'x', onclick: fn}, child, 'text', [more]) builds an element. Keys
// starting with "on" add listeners, "dataset" merges data-* attributes, anything else is set as
// an attribute (so never a style attribute: the CSP forbids inline styles).
export function el(spec, attrs, ...children) {
  const [head, ...classes] = spec.split('.');
  const [tag, id] = head.split('#');
  const node = document.createElement(tag || 'div');
  if (id) node.id = id;
  if (classes.length) node.className = classes.join(' ');
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(node.dataset, v);
      else if (k === 'value') node.value = v;
      else if (k === 'checked' || k === 'selected' || k === 'disabled') node[k] = Boolean(v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  }
}

// Formats microseconds for people: "850 µs", "12.3 ms", "4.56 s".
export function fmtUs(us) {
  if (us === null || us === undefined || Number.isNaN(us)) return '—';
  const a = Math.abs(us);
  if (a >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (a >= 1e3) return `${(us / 1e3).toFixed(a >= 1e5 ? 1 : 2)} ms`;
  return `${Number(us.toFixed(a >= 100 ? 0 : 2))} µs`;
}

export function fmtNum(n, digits) {
  if (typeof digits !== 'number') digits = 2; // also called as a table formatter (value, row)
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  // Below 1, `digits` significant digits: 0.00045 s stays 0.00045, not 0.
  if (Math.abs(n) < 1) return Number(n.toPrecision(digits)).toLocaleString('en-US', { maximumSignificantDigits: digits });
  return Number(n.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits });
}

export function fmtPct(p) {
  return p === null || p === undefined ? '—' : `${Number(p).toFixed(2)} %`;
}

export function fmtBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function fmtWall(us) {
  return us ? new Date(us / 1000).toLocaleString() : '—';
}

// One CSV field (RFC 4180), as the daemon writes them: a text cell that a spreadsheet would run
// as a formula (first character = + - @ TAB CR) gets a leading ' (OWASP's CSV injection advice,
// docs/API.md "Tables for pandas"); a number never does, so -1 stays a number.
function csvField(v) {
  let s = v === null || v === undefined ? '' : String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(columns, rows) {
  const lines = [columns.map((c) => csvField(c.key)).join(',')];
  for (const r of rows) lines.push(columns.map((c) => csvField(r[c.key])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

// Offers text as a file download (a blob URL: nothing leaves the host).
export function download(name, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// Status lines: loading, empty, error, unavailable. An error is always shown, never swallowed.
export function note(kind, text) {
  return el(`p.note.${kind}`, { role: kind === 'error' ? 'alert' : null }, text);
}

export function card(title, opts, ...body) {
  const head = el('div.card-head', null, el('h3', null, title), opts && opts.actions);
  return el(`section.card${opts && opts.cls ? `.${opts.cls}` : ''}`,
    { dataset: { card: opts && opts.id ? opts.id : title } }, head, el('div.card-body', null, body));
}

// A row of tab buttons; onSelect(key) when one is clicked.
export function tabs(items, active, onSelect) {
  return el('div.tabs', { role: 'tablist' }, items.map(([key, label]) => el('button.tab', {
    role: 'tab', 'aria-selected': key === active ? 'true' : 'false', dataset: { tab: key },
    onclick: () => onSelect(key),
  }, label)));
}

// Background for heatmap cells: value in [0, 1] → a colour from pale to strong. Set through
// the CSSOM (allowed by the CSP), never a style attribute.
export function heat(node, t) {
  const x = Math.max(0, Math.min(1, t));
  node.style.backgroundColor = `hsla(${Math.round(210 - 210 * x)}, 75%, 55%, ${0.15 + 0.55 * x})`;
}

// A small colour square (legends); the colour goes through the CSSOM.
export function swatch(color) {
  const s = el('span.swatch');
  s.style.backgroundColor = color;
  return s;
}
