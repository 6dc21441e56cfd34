// Verdict page: summary, timeline picture, explained symptoms, evidence trail, connector reports.
import { api } from './api.js';
import { h, domainBadge, qualityBadge, fmtTime, fmtBytes } from './util.js';
import { timelineSvg, legend, rowsOf } from './timeline.js';

export async function renderVerdict(id) {
  const { run, verdict: v, verdict_error } = await api(`runs/${encodeURIComponent(id)}`);
  const rawHref = `/api/runs/${run.id}/verdict.json`;
  const page = h('section', { class: 'page verdict-page', 'data-run': run.id });
  page.append(h('div', { class: 'crumbs' }, h('a', { href: '#/runs' }, '← Runs')));
  page.append(h('h1', null, `Job ${run.job_id}`, run.attempt ? h('span', { class: 'muted' }, ` attempt ${run.attempt}`) : null,
    h('a', { class: 'raw', href: rawHref, target: '_blank', id: 'raw-json' }, 'raw verdict JSON')));
  page.append(h('div', { class: 'meta' },
    [['cluster', run.cluster], ['scheduler', run.scheduler], ['name', run.name], ['user', run.user], ['queue', run.queue],
      ['state', run.state], ['started', fmtTime(run.start_time)], ['ended', fmtTime(run.end_time)]]
      .filter(([, val]) => val).map(([k, val]) => h('span', null, h('span', { class: 'muted' }, k + ' '), val))));
  if (!v) {
    page.append(h('div', { class: 'error' }, verdict_error || 'no verdict'));
    return page;
  }
  if (run.other_attempts && run.other_attempts.length)
    page.append(h('div', { class: 'small' }, 'Other attempts: ', run.other_attempts.map((o) =>
      h('a', { href: `#/runs/${o.id}`, class: 'attempt' }, `#${o.attempt} ${o.outcome}`))));

  page.append(summary(v));

  // Timeline.
  const wrap = h('div', { class: 'timeline-wrap', id: 'timeline' });
  let mode = 'failure';
  let drawnWidth = 0;
  const draw = () => {
    drawnWidth = Math.max(700, Math.min(1600, wrap.clientWidth || 1100));
    wrap.replaceChildren(timelineSvg(v, mode, drawnWidth));
  };
  new ResizeObserver(() => { if (Math.abs((wrap.clientWidth || 0) - drawnWidth) > 8) draw(); }).observe(wrap);
  const modeBtn = (m, text) => h('button', { class: 'toggle' + (m === mode ? ' active' : ''), 'data-mode': m,
    onclick: (e) => { mode = m; for (const b of e.target.parentNode.children) b.classList.toggle('active', b === e.target); draw(); } }, text);
  page.append(h('div', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Timeline'), h('div', { class: 'toggles' }, modeBtn('failure', 'failure window'), modeBtn('run', 'whole run'))),
    wrap, legend()));
  draw();

  // Explained symptoms.
  if ((v.explained || []).length) {
    page.append(h('div', { class: 'card', id: 'explained' }, h('h2', null, `Explained by the root cause (${v.explained.length})`),
      h('table', { class: 'compact' },
        h('thead', null, h('tr', null, ['Symptom', 'Nodes', 'Ranks', 'Count', 'Explained by', 'Rule'].map((t) => h('th', null, t)))),
        h('tbody', null, v.explained.map((e) => h('tr', null,
          h('td', { class: 'mono' }, e.id), h('td', null, (e.nodes || []).join(', ')),
          h('td', null, e.ranks || ''), h('td', { class: 'num' }, String(e.count ?? '')),
          h('td', { class: 'mono root-ref' }, e.explained_by), h('td', { class: 'mono muted' }, e.rule || '')))))));
  }

  // Evidence trail.
  const rootEv = new Set(((v.root_cause || {}).evidence) || []);
  page.append(h('div', { class: 'card', id: 'evidence' }, h('h2', null, `Evidence trail (${(v.evidence || []).length})`),
    h('ol', { class: 'evidence' }, (v.evidence || []).map((e, i) => {
      const o = e.observation || {};
      return h('li', { class: rootEv.has(i) ? 'root' : '', 'data-symptom': e.symptom },
        h('div', { class: 'ev-head' },
          h('span', { class: 'mono ev-sym' }, e.symptom), rootEv.has(i) ? h('span', { class: 'badge root-badge' }, 'root cause') : null,
          h('span', { class: 'muted' }, ` ${o.node || ''} · ${o.kind || ''} · `),
          h('span', { class: 'mono src' }, `${o.source || ''}${o.line ? ':' + o.line : ''}`),
          h('span', { class: 'muted' }, ` · ${o.time ? fmtTime(o.time, true) : 'no time'}${e.time_inferred ? ' (inferred)' : ''} · ${e.rule || ''}`)),
        h('pre', { class: 'line' }, e.text || ''), o.note ? h('div', { class: 'muted small' }, o.note) : null);
    }))));

  // Connector reports.
  const reports = v.connector_reports || [];
  page.append(h('div', { class: 'card', id: 'connectors' }, h('h2', null, `Connector reports (${reports.length})`),
    h('table', { class: 'compact' },
      h('thead', null, h('tr', null, ['Connector', 'Status', 'Observations', 'Bytes', 'Reason'].map((t) => h('th', null, t)))),
      h('tbody', null, reports.map((r) => h('tr', null,
        h('td', { class: 'mono' }, r.connector), h('td', null, h('span', { class: `badge st-${r.status}` }, r.status)),
        h('td', { class: 'num' }, String(r.observations ?? '')), h('td', { class: 'num' }, fmtBytes(r.bytes)),
        h('td', null, r.reason || '')))))));
  page.append(h('p', { class: 'muted small' }, `engine ${(v.engine || {}).version || ''} · rules ${(v.engine || {}).rules_digest || ''} · analyzed ${fmtTime(run.analyzed_at)} · `,
    h('a', { href: rawHref, target: '_blank' }, 'raw verdict JSON')));
  return page;
}

function summary(v) {
  const rc = v.root_cause;
  const q = v.quality || {};
  const card = h('div', { class: `card summary d-${v.domain}`, id: 'summary' });
  const head = h('div', { class: 'verdict-head' }, domainBadge(v.domain), h('span', { class: 'mono outcome' }, v.outcome), qualityBadge(q.level),
    v.terminal_state ? h('span', { class: 'muted' }, v.terminal_state) : null);
  card.append(head);
  if (rc) {
    card.append(h('div', { class: 'root-cause', id: 'root-cause' },
      h('div', { class: 'rc-label' }, rc.label || rc.symptom),
      h('div', { class: 'rc-where' },
        rc.node ? h('span', null, 'on node ', h('b', { class: 'culprit-node' }, rc.node)) : h('span', { class: 'muted' }, 'no node'),
        rc.gpu ? h('span', null, ' · GPU ', h('b', null, rc.gpu)) : null,
        rc.rank !== null && rc.rank !== undefined ? h('span', null, ' · rank ', h('b', null, String(rc.rank))) : null,
        h('span', { class: 'muted' }, ` · first seen ${fmtTime(rc.first_seen, true)} · `), h('span', { class: 'mono' }, rc.symptom),
        rc.indirect ? h('span', { class: 'badge warn' }, 'indirect evidence') : null),
      rc.recommended_action ? h('div', { class: 'small' }, 'Recommended action: ', h('b', null, rc.recommended_action)) : null));
  } else {
    card.append(h('div', { class: 'root-cause none', id: 'root-cause' }, h('div', { class: 'rc-label' }, v.domain === 'none' ? 'The workload succeeded' : 'No root cause established')));
  }
  const grid = h('div', { class: 'summary-grid' });
  grid.append(h('div', null, h('h3', null, 'Act on'), (v.affected_nodes || []).length
    ? h('ul', { class: 'affected' }, v.affected_nodes.map((n) => h('li', null, h('a', { href: `#/runs?node=${encodeURIComponent(n)}` }, n))))
    : h('p', { class: 'muted' }, 'no node to drain')));
  // What the root cause explains, per node with its rank group: the victims an operator should not chase.
  const explainedNodes = new Map();
  const byRoot = new Set((v.symptoms || []).filter((x) => rc && x.explained_by === rc.symptom).map((x) => `${x.id}|${x.node || ''}`));
  for (const e of v.timeline || [])
    if (e.role === 'explained' && e.node && byRoot.has(`${e.symptom}|${e.node}`)) explainedNodes.set(e.node, (explainedNodes.get(e.node) || 0) + (e.count || 1));
  if (rc && explainedNodes.size) {
    const ranks = new Map(rowsOf(v).map((r) => [r.node, r.ranks]));
    grid.append(h('div', { class: 'consequences', id: 'consequences' }, h('h3', null, `Explained by ${rc.symptom}`),
      h('ul', null, [...explainedNodes].map(([n, c]) => h('li', null, h('b', null, n), ranks.get(n) ? ` (ranks ${ranks.get(n)})` : '',
        ` · ${c} symptom${c === 1 ? '' : 's'}${n === rc.node ? ' on the culprit itself' : ' — a victim, not a cause'}`)))));
  }
  grid.append(h('div', null, h('h3', null, `Quality: ${q.level}`), h('ul', { class: 'reasons' }, (q.reasons || []).map((r) => h('li', null, r)))));
  if ((q.candidates || []).length)
    grid.append(h('div', { id: 'candidates' }, h('h3', null, 'Candidates'), h('ul', null, q.candidates.map((c) => h('li', null,
      typeof c === 'string' ? c : [h('b', null, c.label || c.symptom), ` on ${c.node || '?'} `, h('span', { class: 'muted mono' }, `${c.outcome || ''} ${fmtTime(c.first_seen, true)}`)])))));
  if ((q.missing || []).length)
    grid.append(h('div', { id: 'missing' }, h('h3', null, 'Missing sources'), h('ul', { class: 'missing' }, q.missing.map((m) => h('li', null, m)))));
  card.append(grid);
  return card;
}
