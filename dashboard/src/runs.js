// Runs list: filters (outcome, domain, quality, node, cluster, time window, job id), counts by
// domain, server-side keyset paging (the API's next_cursor; a stack of cursors for "newer").
import { api } from './api.js';
import { h, DOMAINS, QUALITIES, WINDOWS, domainBadge, qualityBadge, fmtTime, windowFrom, debounce, select } from './util.js';

const FILTERS = ['outcome', 'domain', 'quality', 'node', 'cluster', 'q', 'window', 'from', 'to'];

export async function renderRuns(params, facets) {
  const state = {};
  for (const k of FILTERS) state[k] = params[k] || '';
  let cursors = [''];  // cursor of each page shown so far; last = current page

  const counts = h('div', { class: 'counts', id: 'domain-counts' });
  const table = h('div', { class: 'table-wrap' });
  const pager = h('div', { class: 'pager' });
  const timing = h('span', { class: 'muted small' });

  const query = () => {
    const from = state.window === 'custom' ? state.from : windowFrom(state.window);
    const to = state.window === 'custom' ? state.to : '';
    return { outcome: state.outcome, domain: state.domain, quality: state.quality, node: state.node.trim(),
      cluster: state.cluster, q: state.q.trim(), from: from && new Date(from).toISOString(), to: to && new Date(to).toISOString() };
  };

  const syncHash = () => {
    const q = new URLSearchParams();
    for (const k of FILTERS) if (state[k] && (k !== 'from' && k !== 'to' || state.window === 'custom')) q.set(k, state[k]);
    history.replaceState(null, '', '#/runs' + (q.toString() ? '?' + q : ''));
  };

  async function loadCounts() {
    const c = await api('runs/counts', query());
    counts.replaceChildren(...[
      h('button', { class: 'count-chip' + (state.domain ? '' : ' active'), 'data-domain': '', onclick: () => setFilter('domain', '') },
        h('b', null, String(c.total_any_domain)), ' all'),
      DOMAINS.filter((d) => c.by_domain[d]).map((d) =>
        h('button', { class: `count-chip d-${d}` + (state.domain === d ? ' active' : ''), 'data-domain': d,
          onclick: () => setFilter('domain', state.domain === d ? '' : d) },
          h('i', { class: 'swatch' }), h('b', null, String(c.by_domain[d])), ' ', d))].flat());
  }

  async function loadPage() {
    const t0 = performance.now();
    const res = await api('runs', { ...query(), cursor: cursors[cursors.length - 1], limit: 50 });
    timing.textContent = `page ${cursors.length} · ${Math.round(performance.now() - t0)} ms`;
    if (!res.runs.length) {
      table.replaceChildren(h('p', { class: 'empty' }, 'No runs match these filters.'));
    } else {
      table.replaceChildren(h('table', { class: 'runs', id: 'runs-table' },
        h('thead', null, h('tr', null, ['Ended (UTC)', 'Job', 'Name / user', 'Domain', 'Outcome', 'Quality', 'Root cause', 'Act on'].map((t) => h('th', null, t)))),
        h('tbody', null, res.runs.map(row))));
    }
    pager.replaceChildren(
      h('button', { disabled: cursors.length <= 1, onclick: () => { cursors.pop(); loadPage(); } }, '← Newer'),
      h('button', { id: 'older', disabled: !res.next_cursor, onclick: () => { cursors.push(res.next_cursor); loadPage(); } }, 'Older →'),
      timing);
  }

  function row(r) {
    const href = `#/runs/${r.id}`;
    return h('tr', { class: 'run-row', 'data-run': r.id, 'data-job': r.job_id, onclick: (e) => { if (e.target.tagName !== 'A') location.hash = href; } },
      h('td', { class: 'nowrap' }, fmtTime(r.end_time)),
      h('td', null, h('a', { href, class: 'job' }, r.job_id), r.attempt ? h('span', { class: 'muted' }, ` #${r.attempt}`) : null,
        h('div', { class: 'muted small' }, [r.scheduler, r.cluster].filter(Boolean).join(' · '))),
      h('td', null, r.name || '', h('div', { class: 'muted small' }, r.user || '')),
      h('td', null, domainBadge(r.domain)),
      h('td', { class: 'mono' }, r.outcome),
      h('td', null, qualityBadge(r.quality)),
      h('td', null, r.root_label || r.root_symptom || h('span', { class: 'muted' }, '—'),
        r.root_node ? h('div', { class: 'small' }, 'on ', h('b', null, r.root_node)) : null),
      h('td', { class: 'small' }, (r.affected_nodes || []).map((n) => h('a', { class: 'node-link', href: `#/runs?node=${encodeURIComponent(n)}`, onclick: (e) => e.stopPropagation() }, n))));
  }

  function refresh() {
    syncHash();
    cursors = [''];
    return Promise.all([loadCounts(), loadPage()]).catch((e) => table.replaceChildren(h('div', { class: 'error' }, e.message)));
  }
  function setFilter(k, v) {
    state[k] = v;
    const el = form.querySelector(`[name="${k}"]`);
    if (el && el.value !== v) el.value = v;
    refresh();
  }

  const custom = h('span', { class: 'custom-window', hidden: state.window !== 'custom' },
    h('input', { type: 'datetime-local', name: 'from', value: state.from, 'aria-label': 'from', onchange: (e) => setFilter('from', e.target.value) }),
    ' – ',
    h('input', { type: 'datetime-local', name: 'to', value: state.to, 'aria-label': 'to', onchange: (e) => setFilter('to', e.target.value) }));
  const onText = debounce((k, v) => setFilter(k, v), 250);
  const form = h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() },
    h('input', { type: 'search', name: 'q', placeholder: 'job id…', value: state.q, 'aria-label': 'job id', oninput: (e) => onText('q', e.target.value) }),
    select('domain', state.domain, [['', 'any domain'], ...DOMAINS.map((d) => [d, d])], (v) => setFilter('domain', v)),
    select('outcome', state.outcome, [['', 'any outcome'], ...facets.outcomes.map((o) => [o, o])], (v) => setFilter('outcome', v)),
    select('quality', state.quality, [['', 'any quality'], ...QUALITIES.map((q) => [q, q])], (v) => setFilter('quality', v)),
    h('input', { type: 'search', name: 'node', placeholder: 'node…', value: state.node, 'aria-label': 'node', oninput: (e) => onText('node', e.target.value) }),
    facets.clusters.length > 1 ? select('cluster', state.cluster, [['', 'any cluster'], ...facets.clusters.map((c) => [c, c || '(none)'])], (v) => setFilter('cluster', v)) : null,
    select('window', state.window, [...WINDOWS, ['custom', 'custom…']], (v) => { custom.hidden = v !== 'custom'; setFilter('window', v); }, 'time window'),
    custom,
    h('button', { type: 'button', class: 'link', onclick: () => { for (const k of FILTERS) state[k] = ''; form.reset(); for (const el of form.elements) if (el.name) el.value = ''; custom.hidden = true; refresh(); } }, 'clear'));

  const view = h('section', { class: 'page runs-page' }, h('h1', null, 'Runs'), form, counts, table, pager);
  await refresh();
  return view;
}
