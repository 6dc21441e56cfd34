// DOM and formatting helpers. Every text goes through textContent: verdicts carry raw log lines.
const SVGNS = 'http://www.w3.org/2000/svg';

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export const DOMAIN_COLORS = {
  gpu: '#16a34a', network: '#2563eb', node: '#c2410c', storage: '#7c3aed', scheduler: '#475569',
  application: '#0d9488', unknown: '#6b7280', none: '#84cc16',
};
export const DOMAINS = ['gpu', 'network', 'node', 'storage', 'scheduler', 'application', 'unknown', 'none'];
export const QUALITIES = ['definitive', 'probable', 'ambiguous', 'insufficient'];

export function domainBadge(domain) {
  return h('span', { class: `badge domain d-${domain}`, title: `domain: ${domain}` }, domain);
}
export function qualityBadge(q) {
  return h('span', { class: `badge quality q-${q}`, title: `quality: ${q}` }, q);
}

// "2026-03-14T11:57:38.000Z" → "2026-03-14 11:57:38" (UTC, as stored).
export function fmtTime(t, withMs = false) {
  if (!t) return '—';
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  const iso = d.toISOString();
  return iso.slice(0, 10) + ' ' + iso.slice(11, withMs ? 23 : 19);
}
export function fmtNs(ns) {
  return ns === null || ns === undefined ? '—' : fmtTime(new Date(Number(ns) / 1e6).toISOString());
}
export function fmtBytes(n) {
  if (n === undefined || n === null) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}

// Relative window presets → RFC 3339 "from" (relative to now).
export const WINDOWS = [['', 'any time'], ['24h', 'last 24 h'], ['7d', 'last 7 days'], ['30d', 'last 30 days'], ['90d', 'last 90 days'], ['365d', 'last year']];
export function windowFrom(win) {
  const m = /^(\d+)([hd])$/.exec(win || '');
  if (!m) return '';
  const ms = Number(m[1]) * (m[2] === 'h' ? 3600e3 : 86400e3);
  return new Date(Date.now() - ms).toISOString();
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

export function select(name, value, options, onchange, label) {
  const sel = h('select', { name, 'aria-label': label || name, onchange: (e) => onchange(e.target.value) },
    options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));
  return sel;
}
