// Fleet page: nodes, GPUs and ports implicated by failed runs in a time window, repeat
// offenders first; each links to the runs list filtered on that node.
import { api } from './api.js';
import { h, DOMAINS, WINDOWS, domainBadge, fmtNs, windowFrom, select } from './util.js';

export async function renderFleet(params) {
  const win = params.window || '';
  const domain = params.domain || '';
  const from = windowFrom(win);
  const t0 = performance.now();
  const f = await api('fleet', { from, domain, limit: 200 });
  const ms = Math.round(performance.now() - t0);
  const go = (w, d) => { location.hash = '#/fleet' + (w || d ? '?' + new URLSearchParams(Object.entries({ window: w, domain: d }).filter(([, x]) => x)) : ''); };
  const max = Math.max(1, ...f.nodes.map((n) => n.runs));
  const runsHref = (node) => `#/runs?node=${encodeURIComponent(node)}${win ? '&window=' + win : ''}${domain ? '&domain=' + domain : ''}`;

  const page = h('section', { class: 'page fleet-page' },
    h('h1', null, 'Fleet'),
    h('p', { class: 'muted' }, 'Nodes and GPUs implicated by failed runs (root cause, node to act on, or candidate), repeat offenders first.'),
    h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() },
      select('window', win, WINDOWS, (w) => go(w, domain), 'time window'),
      select('domain', domain, [['', 'any domain'], ...DOMAINS.filter((d) => d !== 'none').map((d) => [d, d])], (d) => go(win, d)),
      h('span', { class: 'muted small' }, `${ms} ms`)));

  page.append(h('div', { class: 'card' }, h('h2', null, `Nodes (${f.nodes.length})`),
    f.nodes.length ? h('table', { class: 'fleet', id: 'fleet-nodes' },
      h('thead', null, h('tr', null, ['#', 'Node', 'Failed runs', 'Root cause', 'Act on', 'Candidate', 'Domains', 'Outcomes', 'Last failure'].map((t) => h('th', null, t)))),
      h('tbody', null, f.nodes.map((n, i) => h('tr', { class: 'fleet-row' + (n.runs > 1 ? ' repeat' : ''), 'data-node': n.node, onclick: (e) => { if (e.target.tagName !== 'A') location.hash = runsHref(n.node); } },
        h('td', { class: 'num muted' }, String(i + 1)),
        h('td', null, h('a', { href: runsHref(n.node), class: 'node-link' }, n.node), n.runs > 1 ? h('span', { class: 'badge warn' }, 'repeat') : null),
        h('td', null, h('div', { class: 'bar-cell' }, h('span', { class: 'bar', style: `width:${Math.round((n.runs / max) * 100)}%` }), h('b', null, String(n.runs)))),
        h('td', { class: 'num' }, String(n.root_cause)), h('td', { class: 'num' }, String(n.affected)), h('td', { class: 'num' }, String(n.candidate)),
        h('td', null, n.domains.map(domainBadge)),
        h('td', { class: 'mono small' }, n.outcomes.join(', ')),
        h('td', { class: 'nowrap small' }, fmtNs(n.last_end_ns))))))
      : h('p', { class: 'empty' }, 'No failed runs implicate a node in this window.')));

  page.append(h('div', { class: 'card' }, h('h2', null, `GPUs (${f.gpus.length})`),
    f.gpus.length ? h('table', { class: 'fleet', id: 'fleet-gpus' },
      h('thead', null, h('tr', null, ['Node', 'GPU', 'Failed runs', 'Outcomes', 'Last failure'].map((t) => h('th', null, t)))),
      h('tbody', null, f.gpus.map((g) => h('tr', { class: g.runs > 1 ? 'repeat' : '' },
        h('td', null, h('a', { href: runsHref(g.node), class: 'node-link' }, g.node)), h('td', { class: 'mono' }, g.gpu),
        h('td', { class: 'num' }, String(g.runs)), h('td', { class: 'mono small' }, g.outcomes.join(', ')),
        h('td', { class: 'nowrap small' }, fmtNs(g.last_end_ns))))))
      : h('p', { class: 'empty' }, 'No verdict in this window names a GPU.')));

  page.append(h('div', { class: 'card' }, h('h2', null, `Switch / HCA ports (${f.ports.length})`),
    f.ports.length ? h('table', { class: 'fleet', id: 'fleet-ports' },
      h('thead', null, h('tr', null, ['Node', 'Port', 'Failed runs', 'Last failure'].map((t) => h('th', null, t)))),
      h('tbody', null, f.ports.map((p) => h('tr', null,
        h('td', null, p.node ? h('a', { href: runsHref(p.node), class: 'node-link' }, p.node) : '—'), h('td', { class: 'mono' }, p.port),
        h('td', { class: 'num' }, String(p.runs)), h('td', { class: 'nowrap small' }, fmtNs(p.last_end_ns))))))
      : h('p', { class: 'empty' }, 'No network verdict in this window names a port.')));
  return page;
}
