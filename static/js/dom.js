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

// Every figure with a sign goes through fmtSigned, so that every page writes it alike: a negative
// one gets U+2212, the minus sign (typography's, as the Memory page had it), not the hyphen-minus;
// plus: a positive one gets "+" (a change). mag formats the magnitude. A figure that shows as
// zero gets no sign. The CSV keeps the API's numbers (toCsv writes the values, not these texts),
// so a plain "-" there.
export const MINUS = '\u2212';
export function fmtSigned(v, mag, plus = false) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  const s = mag(Math.abs(v));
  if (!/[1-9]/u.test(s)) return s;
  if (v < 0) return `${MINUS}${s}`;
  return plus && v > 0 ? `+${s}` : s;
}

// A change: "+1.2 ms", "−3", fmt one of the formatters below.
export function fmtChange(v, fmt = fmtNum) {
  return fmtSigned(v, fmt, true);
}

// Formats microseconds for people: "850 µs", "12.3 ms", "4.56 s".
export function fmtUs(us) {
  return fmtSigned(us, (a) => {
    if (a >= 1e6) return `${(a / 1e6).toFixed(2)} s`;
    if (a >= 1e3) return `${(a / 1e3).toFixed(a >= 1e5 ? 1 : 2)} ms`;
    return `${Number(a.toFixed(a >= 100 ? 0 : 2))} µs`;
  });
}

export function fmtNum(n, digits) {
  if (typeof digits !== 'number') digits = 2; // also called as a table formatter (value, row)
  return fmtSigned(n, (a) => {
    if (Number.isInteger(a)) return a.toLocaleString('en-US');
    // Below 1, `digits` significant digits: 0.00045 s stays 0.00045, not 0.
    if (a < 1) return Number(a.toPrecision(digits)).toLocaleString('en-US', { maximumSignificantDigits: digits });
    return Number(a.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits });
  });
}

export function fmtPct(p) {
  return fmtSigned(p === null || p === undefined ? p : Number(p), (a) => `${a.toFixed(2)} %`);
}

export function fmtBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  return fmtSigned(n, (a) => {
    let i = 0;
    while (a >= 1024 && i < units.length - 1) {
      a /= 1024;
      i++;
    }
    return `${i === 0 ? a : a.toFixed(1)} ${units[i]}`;
  });
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

// Offers text (or a Blob, its bytes unchanged) as a file download (a blob URL: nothing leaves the host).
export function download(name, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// The CSV control of every page: a button (data-csv=id) that downloads what content() gives, a
// table's rows as text (table.js) or a route's own format=csv as its bytes (api.js getBlob). A
// failure is shown beside it, never swallowed.
export function csvButton(id, name, content, label = 'CSV') {
  const btn = el('button.btn', {
    type: 'button', dataset: { csv: id },
    onclick: async () => {
      const prev = btn.nextElementSibling;
      if (prev && prev.dataset.csvError === id) prev.remove();
      try {
        download(name, await content());
      } catch (e) {
        btn.after(el('span.note.error', { role: 'alert', dataset: { csvError: id } }, `CSV: ${e.message || e}`));
      }
    },
  }, label);
  return btn;
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
