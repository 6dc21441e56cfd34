// The timeline picture: one row per node (with its rank group), a time axis, the symptoms as
// marks. The root cause is a large red diamond on a highlighted row; explained symptoms are
// orange and tied to the root mark by arrows (one per row, to the row's first explained mark);
// other causes are purple triangles, context grey ticks. Marks without a time sit in a
// separate "no time" column.
import { s, h, fmtTime } from './util.js';

const ROLE_ORDER = { context: 0, victim: 1, symptom: 1, unexplained_cause: 1, candidate: 2, explained: 3, root_cause: 4 };

function ms(t) { const v = Date.parse(t); return isNaN(v) ? null : v; }

export function rowsOf(verdict) {
  const w = verdict.workload || {};
  const names = [...(w.nodes || [])];
  for (const e of verdict.timeline || []) if (e.node && !names.includes(e.node)) names.push(e.node);
  const rc = verdict.root_cause || {};
  for (const c of (verdict.quality || {}).candidates || []) if (c && c.node && !names.includes(c.node)) names.push(c.node);
  if (rc.node && !names.includes(rc.node)) names.push(rc.node);
  if ((verdict.timeline || []).some((e) => !e.node)) names.push('');
  const ranks = {};
  for (const sy of verdict.symptoms || []) if (sy.node && sy.ranks) (ranks[sy.node] ||= new Set()).add(sy.ranks);
  return names.map((n) => ({ node: n, ranks: ranks[n] ? [...ranks[n]].sort((a, b) => a.length - b.length).pop() : '' }));
}

function niceStep(spanMs, target) {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 172800e3, 604800e3];
  for (const st of steps) if (spanMs / st <= target) return st;
  return steps[steps.length - 1];
}

function tickLabel(t, step) {
  const iso = new Date(t).toISOString();
  if (step >= 86400e3) return iso.slice(5, 10);
  if (step >= 60e3) return iso.slice(11, 16);
  if (step >= 1e3) return iso.slice(11, 19);
  return iso.slice(11, 23);
}

// mode: 'failure' (zoom on the failure: root cause and what it explains) or 'run' (whole run).
export function timelineSvg(verdict, mode, width) {
  // The timeline's "symptom" role covers unexplained causes and unexplained victims; the
  // symptoms list tells them apart.
  const rcSym = verdict.root_cause && verdict.root_cause.symptom;
  const symRole = new Map((verdict.symptoms || []).map((x) => [`${x.symptom || x.id}|${x.node || ''}`, x.role]));
  const explainedBy = new Map((verdict.symptoms || []).filter((x) => x.explained_by).map((x) => [`${x.id}|${x.node || ''}`, x.explained_by]));
  const events = (verdict.timeline || []).map((e) => {
    let role = e.role;
    const by = explainedBy.get(`${e.symptom}|${e.node || ''}`) || (rcSym || '');
    if (role === 'symptom') role = symRole.get(`${e.symptom}|${e.node || ''}`) === 'unexplained_victim' ? 'victim' : 'unexplained_cause';
    return { ...e, role, by, ms: ms(e.t) };
  });
  const rows = rowsOf(verdict);
  const rc = verdict.root_cause || null;
  const rootNode = rc && rc.node;
  const candidates = new Set(((verdict.quality || {}).candidates || []).map((c) => c && c.node).filter(Boolean));
  const timed = events.filter((e) => e.ms !== null);
  const untimed = events.filter((e) => e.ms === null);
  const w = verdict.workload || {};

  let t0, t1;
  // The failure window: the root cause and what it explains; without a root cause, every
  // non-context mark (on an insufficient verdict the unexplained symptoms are all there is).
  let focus = timed.filter((e) => e.role === 'root_cause' || e.role === 'explained' || e.role === 'candidate');
  if (!focus.length) focus = timed.filter((e) => e.role !== 'context');
  if (mode === 'failure' && focus.length) {
    t0 = Math.min(...focus.map((e) => e.ms));
    t1 = Math.max(...focus.map((e) => e.ms));
  } else {
    const all = timed.map((e) => e.ms).concat([ms(w.start), ms(w.end)].filter((v) => v !== null));
    t0 = all.length ? Math.min(...all) : 0;
    t1 = all.length ? Math.max(...all) : 1;
  }
  const pad = Math.max((t1 - t0) * 0.06, 500);
  t0 -= pad; t1 += pad;

  const labelW = 170, rightW = untimed.length ? 90 : 16, rowH = 52, top = 34;
  const plotW = Math.max(200, width - labelW - rightW);
  const height = top + rows.length * rowH + 30;
  const x = (t) => labelW + ((t - t0) / (t1 - t0)) * plotW;
  const rowIndex = new Map(rows.map((r, i) => [r.node, i]));
  const y = (node) => top + (rowIndex.get(node || '') ?? 0) * rowH + rowH / 2;

  const svg = s('svg', { class: 'timeline', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `Timeline of ${rows.length} nodes` });
  svg.append(s('defs', null,
    s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#dc2626' })),
    s('marker', { id: 'arrow-other', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#7c3aed' }))));

  // Rows.
  rows.forEach((r, i) => {
    const yy = top + i * rowH;
    const culprit = r.node && r.node === rootNode;
    const cand = candidates.has(r.node);
    const g = s('g', { class: 'tl-row' + (culprit ? ' culprit' : '') + (cand ? ' candidate' : ''), 'data-node': r.node });
    g.append(s('rect', { x: 0, y: yy, width, height: rowH, class: culprit ? 'row-bg culprit' : cand ? 'row-bg candidate' : (i % 2 ? 'row-bg odd' : 'row-bg') }));
    g.append(s('text', { x: 8, y: yy + 16, class: 'row-label' + (culprit ? ' culprit' : '') }, r.node || 'job / scheduler'));
    const sub = [r.ranks ? `ranks ${r.ranks}` : '', culprit ? 'ROOT CAUSE' : cand ? 'candidate' : ''].filter(Boolean).join(' · ');
    if (sub) g.append(s('text', { x: 8, y: yy + 31, class: 'row-sub' + (culprit ? ' culprit' : '') }, sub));
    g.append(s('line', { x1: labelW, x2: labelW + plotW, y1: yy + rowH / 2, y2: yy + rowH / 2, class: 'row-axis' }));
    svg.append(g);
  });

  // Axis.
  const step = niceStep(t1 - t0, Math.max(3, Math.floor(plotW / 90)));
  const axis = s('g', { class: 'axis' });
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    axis.append(s('line', { x1: x(t), x2: x(t), y1: top - 4, y2: top + rows.length * rowH, class: 'tick' }));
    axis.append(s('text', { x: x(t), y: top - 8, 'text-anchor': 'middle', class: 'tick-label' }, tickLabel(t, step)));
  }
  axis.append(s('text', { x: labelW, y: 12, class: 'axis-title' }, `UTC ${new Date(t0 + pad).toISOString().slice(0, 10)}`));
  if (untimed.length) {
    const ux = labelW + plotW + 8;
    axis.append(s('rect', { x: ux - 4, y: top, width: rightW - 8, height: rows.length * rowH, class: 'untimed-col' }));
    axis.append(s('text', { x: ux + (rightW - 16) / 2, y: top - 8, 'text-anchor': 'middle', class: 'tick-label' }, 'no time'));
  }
  svg.append(axis);

  // Marks, context first so causes are drawn on top.
  const marks = s('g', { class: 'marks' });
  const links = s('g', { class: 'links' });
  svg.append(links, marks);
  const sorted = [...events].sort((a, b) => (ROLE_ORDER[a.role] ?? 1) - (ROLE_ORDER[b.role] ?? 1));
  let rootPos = null;
  const markPos = new Map();
  const firstExplained = new Map();
  const outside = { before: 0, after: 0 };
  const untimedSlot = new Map();
  for (const e of sorted) {
    let cx;
    if (e.ms === null) {
      const k = e.node || '';
      const n = untimedSlot.get(k) || 0;
      untimedSlot.set(k, n + 1);
      cx = labelW + plotW + 14 + (n % 6) * 11;
    } else {
      if (e.ms < t0) { outside.before++; continue; }
      if (e.ms > t1) { outside.after++; continue; }
      cx = x(e.ms);
    }
    const cy = y(e.node);
    const title = s('title', null, `${e.t ? fmtTime(e.t, true) : 'no time'}  ${e.node || 'job'}  ${e.symptom}${e.count > 1 ? ' ×' + e.count : ''}  (${e.role.replace('_', ' ')}${e.role === 'explained' && e.by ? ' by ' + e.by : ''})`);
    const common = { 'data-symptom': e.symptom, 'data-role': e.role, 'data-node': e.node };
    let mark;
    if (e.role === 'root_cause') {
      mark = s('g', { class: 'mark root', ...common },
        s('circle', { cx, cy, r: 13, class: 'halo' }),
        s('path', { d: `M${cx},${cy - 10} L${cx + 10},${cy} L${cx},${cy + 10} L${cx - 10},${cy} Z`, class: 'root-shape' }), title);
      if (e.ms !== null && !rootPos) rootPos = { cx, cy };
    } else if (e.role === 'explained') {
      mark = s('circle', { cx, cy, r: 5, class: 'mark explained' + (e.by !== rcSym ? ' by-other' : ''), ...common }, title);
      const key = `${e.node}|${e.by}`;
      const prev = firstExplained.get(key);
      if (e.ms !== null && (!prev || e.ms < prev.ms)) firstExplained.set(key, { cx, cy, ms: e.ms, node: e.node, by: e.by });
    } else if (e.role === 'victim') {
      mark = s('circle', { cx, cy, r: 5, class: 'mark victim', ...common }, title);
    } else if (e.role === 'candidate' || e.role === 'unexplained_cause') {
      mark = s('path', { d: `M${cx},${cy - 7} L${cx + 7},${cy + 6} L${cx - 7},${cy + 6} Z`, class: 'mark other-cause', ...common }, title);
    } else {
      mark = s('rect', { x: cx - 1.5, y: cy - 7, width: 3, height: 14, class: 'mark context', ...common }, title);
    }
    if (e.ms !== null && (!markPos.has(e.symptom) || e.role === 'root_cause')) markPos.set(e.symptom, { cx, cy });
    marks.append(mark);
  }
  // Ties: the explaining mark (the root cause, or another symptom that explains some) → the
  // first mark it explains on each row.
  if (rootPos) links.append(s('line', { x1: rootPos.cx, x2: rootPos.cx, y1: top, y2: top + rows.length * rowH, class: 'root-time' }));
  for (const p of firstExplained.values()) {
    const fromRoot = p.by === rcSym;
    const src = fromRoot ? rootPos : markPos.get(p.by);
    if (!src) continue;
    const sameRow = Math.abs(src.cy - p.cy) < 1;
    const dx = p.cx - src.cx;
    if (sameRow && Math.abs(dx) < 14) continue;
    const mx = src.cx + dx * 0.5 + (sameRow ? 0 : -Math.min(40, Math.abs(dx) / 3)), my = (src.cy + p.cy) / 2 + (sameRow ? -18 : 0);
    links.append(s('path', { d: `M${src.cx},${src.cy} Q${mx},${my} ${p.cx - 6 * Math.sign(dx || 1)},${p.cy}`,
      class: fromRoot ? 'tie' : 'tie other', 'marker-end': fromRoot ? 'url(#arrow)' : 'url(#arrow-other)', 'data-to': p.node, 'data-from': p.by }));
  }
  // Per-row summary at the right edge of the plot.
  const perRow = new Map();
  for (const e of events) if (e.role === 'explained') perRow.set(e.node, (perRow.get(e.node) || 0) + (e.count || 1));
  rows.forEach((r, i) => {
    const n = perRow.get(r.node);
    if (n && rc) svg.append(s('text', { x: 8, y: top + i * rowH + 47, class: 'row-note' }, `${n} symptoms explained`));
  });
  if (outside.before || outside.after) {
    svg.append(s('text', { x: labelW + plotW, y: height - 8, 'text-anchor': 'end', class: 'row-sub' },
      `${outside.before + outside.after} context marks outside this window (${outside.before} before, ${outside.after} after)`));
  }
  return svg;
}

export function legend() {
  const item = (cls, text, shape) => h('span', { class: 'legend-item' }, shape(cls), text);
  const box = (child) => { const sv = s('svg', { width: 18, height: 18, viewBox: '0 0 18 18' }, child); return sv; };
  return h('div', { class: 'legend' },
    item('root-shape', 'root cause', () => box(s('path', { d: 'M9,1 L17,9 L9,17 L1,9 Z', class: 'root-shape' }))),
    item('explained', 'explained by the root cause (arrow)', () => box(s('circle', { cx: 9, cy: 9, r: 5, class: 'mark explained' }))),
    item('other', 'other cause / unexplained symptom', () => box(s('path', { d: 'M9,2 L16,15 L2,15 Z', class: 'mark other-cause' }))),
    item('victim', 'unexplained symptom', () => box(s('circle', { cx: 9, cy: 9, r: 5, class: 'mark victim' }))),
    item('context', 'context', () => box(s('rect', { x: 7.5, y: 2, width: 3, height: 14, class: 'mark context' }))));
}
