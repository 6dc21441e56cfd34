// Fabric page (#/fabric?c=<component id>): the stored topology drawn as a picture — spines on top,
// leaves below them, each leaf's hosts as tiles under it (one tile per host link, in port order),
// the NVLink domains as a row of boxes — with every component an open fleet finding names in red
// (components it is ambiguous with in amber). Clicking a switch lists its ports; clicking a port,
// a host tile, an uplink or a domain shows the finding and the runs whose evidence touched it, with
// their evidence lines, each run linking to its verdict. Reads GET /api/fabric/topology,
// /api/fabric/findings and /api/fabric/component (docs/fabric.md §6).
import { api } from './api.js';
import { h, s, fmtNs, fmtTime } from './util.js';

const TILE = 6, GAP = 1, TILE_COLS = 4;

// The component's end on a switch: "leaf-01/3" of link:gpu-a01/mlx5_0/1~leaf-01/3 (the end with two parts).
function ends(linkId) {
  return linkId.replace(/^link:/, '').split('~');
}

function findingIndex(findings) {
  const byComponent = new Map();
  const ambiguous = new Map();
  for (const f of findings) {
    if (f.status && f.status !== 'open') continue;
    if (!byComponent.has(f.component)) byComponent.set(f.component, f);
    for (const other of f.ambiguous_with || []) if (!ambiguous.has(other)) ambiguous.set(other, f);
  }
  return { byComponent, ambiguous, state(id) { return byComponent.has(id) ? 'finding' : ambiguous.has(id) ? 'ambiguous' : ''; } };
}

// The separate fabrics of a topology (e.g. the InfiniBand compute fabric and a RoCE front end):
// switches joined by switch-to-switch links, each with its links; largest first.
export function fabricsOf(topo) {
  const parent = new Map((topo.switches || []).map((x) => [x.name, x.name]));
  const find = (x) => { while (parent.get(x) !== x) { parent.set(x, parent.get(parent.get(x))); x = parent.get(x); } return x; };
  for (const l of topo.links || []) {
    if (l.a.switch && l.b.switch && parent.has(l.a.switch) && parent.has(l.b.switch)) parent.set(find(l.a.switch), find(l.b.switch));
  }
  const groups = new Map();
  for (const sw of topo.switches || []) {
    const r = find(sw.name);
    if (!groups.has(r)) groups.set(r, { switches: [], links: [] });
    groups.get(r).switches.push(sw);
  }
  for (const l of topo.links || []) {
    const sw = l.a.switch || l.b.switch;
    if (sw && parent.has(sw)) groups.get(find(sw)).links.push(l);
  }
  return [...groups.values()].sort((a, b) => b.links.length - a.links.length || a.switches[0].name.localeCompare(b.switches[0].name));
}

// Lays out and draws one fabric's leaf/spine picture; `select(id)` is called with a component id.
function topologySvg(topo, idx, selected, select, n) {
  const switches = topo.switches || [];
  const spines = switches.filter((x) => x.tier === 'spine').map((x) => x.name).sort();
  const leaves = switches.filter((x) => x.tier !== 'spine').map((x) => x.name).sort();
  const hostLinks = new Map();  // leaf → [{port, host, link}]
  const switchLinks = [];
  for (const l of topo.links || []) {
    if (l.kind === 'host') {
      const sw = l.a.switch ? l.a : l.b, host = l.a.switch ? l.b : l.a;
      if (!hostLinks.has(sw.switch)) hostLinks.set(sw.switch, []);
      hostLinks.get(sw.switch).push({ port: sw.port, host: host.host, hca: host.hca, link: l.id });
    } else switchLinks.push(l);
  }
  for (const v of hostLinks.values()) v.sort((a, b) => a.port - b.port);
  const colW = Math.max(TILE_COLS * (TILE + GAP) + 10, Math.min(80, Math.floor(1300 / Math.max(1, leaves.length))));
  const margin = 44;
  const width = Math.max(900, margin * 2 + leaves.length * colW);
  const spineY = 30, leafY = 190, hostY = leafY + 34;
  const maxHosts = Math.max(0, ...[...hostLinks.values()].map((v) => v.length));
  const hostRows = Math.ceil(maxHosts / TILE_COLS);
  const height = hostY + hostRows * (TILE + GAP) + 30;
  const leafX = new Map(leaves.map((n, i) => [n, margin + i * colW + colW / 2]));
  const spineStep = (width - 2 * margin) / Math.max(1, spines.length);
  const spineX = new Map(spines.map((n, i) => [n, margin + spineStep * (i + 0.5)]));
  const cls = (base, id) => [base, idx.state(id), id === selected ? 'selected' : ''].filter(Boolean).join(' ');
  const svg = s('svg', { class: 'fabric-topology', id: n ? `fabric-topology-${n + 1}` : 'fabric-topology', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `fabric: ${spines.length} spines, ${leaves.length} leaves, ${(topo.hosts || []).length} hosts` });
  svg.append(s('text', { x: 8, y: spineY + 5, class: 'tier-label' }, 'spines'), s('text', { x: 8, y: leafY + 5, class: 'tier-label' }, 'leaves'),
    s('text', { x: 8, y: hostY + 8, class: 'tier-label' }, 'hosts'));
  // Uplinks first (under the switches); the ones with findings last so they are on top.
  const uplinks = switchLinks.filter((l) => leafX.has(l.a.switch) ? spineX.has(l.b.switch) : (leafX.has(l.b.switch) && spineX.has(l.a.switch)));
  uplinks.sort((p, q) => (idx.state(p.id) ? 1 : 0) - (idx.state(q.id) ? 1 : 0));
  const g = s('g', { class: 'uplinks' });
  for (const l of uplinks) {
    const leaf = leafX.has(l.a.switch) ? l.a : l.b, spine = leaf === l.a ? l.b : l.a;
    const x1 = leafX.get(leaf.switch), x2 = spineX.get(spine.switch);
    const line = s('line', { class: cls('uplink', l.id), 'data-id': l.id, x1, y1: leafY - 10, x2, y2: spineY + 10,
      onclick: () => select(l.id) }, s('title', null, `${l.id}${idx.state(l.id) ? ' — ' + idx.state(l.id) : ''}`));
    g.append(line);
  }
  svg.append(g);
  for (const [name, x] of spineX) {
    const id = 'switch:' + name;
    svg.append(s('g', { class: cls('sw spine', id), 'data-id': id, 'data-switch': name, onclick: () => select(id) },
      s('rect', { x: x - 22, y: spineY - 10, width: 44, height: 20, rx: 4 }),
      s('text', { x, y: spineY + 4, 'text-anchor': 'middle' }, name.replace(/^.*?(\d+)$/, 'S$1')),
      s('title', null, id)));
  }
  for (const [name, x] of leafX) {
    const id = 'switch:' + name;
    const sw = s('g', { class: cls('sw leaf', id), 'data-id': id, 'data-switch': name, onclick: () => select(id) },
      s('rect', { x: x - colW / 2 + 3, y: leafY - 10, width: colW - 6, height: 20, rx: 4 }),
      s('text', { x, y: leafY + 4, 'text-anchor': 'middle' }, name.replace(/^.*?(\d+)$/, 'L$1')),
      s('title', null, id));
    svg.append(sw);
    const hosts = hostLinks.get(name) || [];
    const x0 = x - (TILE_COLS * (TILE + GAP)) / 2;
    hosts.forEach((hl, i) => {
      const state = idx.state(hl.link);
      const tile = s('rect', { class: cls('host', hl.link), 'data-host': hl.host, 'data-link': hl.link, 'data-port': `${name}/${hl.port}`,
        x: x0 + (i % TILE_COLS) * (TILE + GAP), y: hostY + Math.floor(i / TILE_COLS) * (TILE + GAP), width: TILE, height: TILE,
        onclick: () => select(hl.link) }, s('title', null, `${hl.host} ${hl.hca} ↔ ${name} port ${hl.port}${state ? ' — ' + state : ''}`));
      svg.append(tile);
      if (state) svg.append(s('line', { class: 'port-mark ' + state, x1: x0 + (i % TILE_COLS) * (TILE + GAP) + TILE / 2, y1: leafY + 10,
        x2: x0 + (i % TILE_COLS) * (TILE + GAP) + TILE / 2, y2: hostY + Math.floor(i / TILE_COLS) * (TILE + GAP) }));
    });
  }
  return svg;
}

function domainsRow(topo, idx, selected, select) {
  const domains = topo.nvlink_domains || [];
  if (!domains.length) return null;
  return h('div', { class: 'nvl-row', id: 'fabric-nvlink' },
    domains.map((d) => {
      const id = 'nvlink_domain:' + d.name;
      return h('button', { class: ['nvl', idx.state(id), id === selected ? 'selected' : ''].filter(Boolean).join(' '), 'data-id': id,
        title: `${id}: ${d.hosts.length} hosts (${d.hosts.slice(0, 4).join(', ')}${d.hosts.length > 4 ? ', …' : ''})`, onclick: () => select(id) },
      d.name.replace(/^.*?(\d+)$/, '$1'));
    }));
}

function findingSummary(f) {
  if (!f) return h('p', { class: 'muted' }, 'No open finding names this component.');
  return h('div', { class: 'finding-summary' },
    h('div', { class: 'meta' },
      h('span', null, h('b', null, 'finding '), h('span', { class: 'mono' }, f.id)),
      h('span', null, 'confidence ', h('b', null, Number(f.confidence).toFixed(4))),
      h('span', null, h('b', null, String(f.failed_runs)), ' failed of ', h('b', null, String(f.crossing_runs)), ' runs crossing (',
        String(f.expected !== undefined ? Number(f.expected).toFixed(2) : '?'), ' expected by chance)'),
      h('span', null, `${f.hosts_total} hosts, ${f.users_total} users, ${f.jobs_total} jobs`),
      h('span', null, `${fmtTime(f.first_seen)} → ${fmtTime(f.last_seen)}`)),
    f.switch_port ? h('div', null, 'switch port ', h('b', { class: 'mono' }, f.switch_port)) : null,
    (f.ambiguous_with || []).length ? h('div', { class: 'small' }, 'ambiguous with: ',
      h('span', { class: 'mono' }, f.ambiguous_with.join(', '))) : null);
}

function portsTable(topo, name, idx, select) {
  const rows = [];
  for (const l of topo.links || []) {
    const [me, other] = l.a.switch === name ? [l.a, l.b] : l.b.switch === name ? [l.b, l.a] : [null, null];
    if (!me) continue;
    rows.push({ port: me.port, peer: other.switch ? `${other.switch} port ${other.port}` : `${other.host} ${other.hca}/${other.port}`, link: l });
  }
  rows.sort((a, b) => a.port - b.port);
  return h('table', { class: 'fleet compact', id: 'fabric-ports' },
    h('thead', null, h('tr', null, ['Port', 'Peer', 'Link', 'Width', 'State'].map((t) => h('th', null, t)))),
    h('tbody', null, rows.map((r) => {
      const st = idx.state(r.link.id);
      return h('tr', { class: 'port-row ' + st, 'data-port': String(r.port), 'data-link': r.link.id, onclick: () => select(r.link.id) },
        h('td', { class: 'num' }, String(r.port)), h('td', null, r.peer), h('td', { class: 'mono small' }, r.link.id),
        h('td', { class: 'small' }, `${r.link.width || ''}${r.link.speed || ''}`),
        h('td', null, st ? h('span', { class: 'badge ' + (st === 'finding' ? 'fab-bad' : 'warn') }, st) : h('span', { class: 'muted small' }, 'ok')));
    })));
}

async function componentRuns(id) {
  const r = await api('fabric/component', { id, limit: 50 });
  const runs = r.runs || [];
  if (!runs.length) return h('p', { class: 'empty' }, 'No stored run has evidence touching this component.');
  const evidenceList = (run) => h('ul', { class: 'evidence-lines' }, (run.evidence || []).slice(0, 6).map((e) => h('li', null,
    h('div', { class: 'small muted' }, `${e.node || ''} ${e.symptom || ''} ${e.source ? e.source + (e.line ? ':' + e.line : '') : ''}`),
    h('code', { class: 'line' }, e.text || JSON.stringify(e.location || {})))));
  const row = (run) => h('tr', { class: 'fabric-run' + (run.fabric ? ' fab' : ''), 'data-run': String(run.run_id), 'data-job': run.job_id },
    h('td', null, h('a', { href: `#/runs/${run.run_id}`, class: 'job' }, run.job_id)),
    h('td', null, run.user || ''),
    h('td', { class: 'nowrap small' }, fmtNs(run.end_ns)),
    h('td', { class: 'mono small' }, run.outcome),
    h('td', null, evidenceList(run)));
  return h('table', { class: 'fleet', id: 'fabric-runs' },
    h('thead', null, h('tr', null, ['Job', 'User', 'End', 'Outcome', 'Evidence'].map((t) => h('th', null, t)))),
    h('tbody', null, runs.map(row)));
}

export async function renderFabric(params) {
  const selected = params.c || '';
  const t0 = performance.now();
  let topo;
  try {
    topo = await api('fabric/topology');
  } catch (e) {
    return h('section', { class: 'page fabric-page' }, h('h1', null, 'Fabric'),
      h('p', { class: 'empty', id: 'fabric-empty' }, 'No topology stored (attribution-blueprint topology import ibnetdiscover.txt fabric.yaml). ', e.message));
  }
  const found = await api('fabric/findings', { status: 'open' });
  const findings = found.findings || [];
  const idx = findingIndex(findings);
  const ms = Math.round(performance.now() - t0);
  const select = (id) => { location.hash = '#/fabric?' + new URLSearchParams({ c: id }); };

  const page = h('section', { class: 'page fabric-page' },
    h('h1', null, 'Fabric'),
    h('p', { class: 'muted' }, `Topology #${topo.id} valid from ${fmtTime(topo.valid_from)} (${(topo.sources || []).join(', ')}): `,
      `${(topo.switches || []).length} switches, ${(topo.hosts || []).length} hosts, ${(topo.links || []).length} links. `,
      `Components named by an open fleet finding are red, components a finding is ambiguous with amber. ${ms} ms`));

  const fabrics = fabricsOf(topo);
  const describe = (fab) => {
    const spines = fab.switches.filter((x) => x.tier === 'spine').length;
    return `${fab.switches.length - spines} leaves, ${spines} spines, ${fab.links.filter((l) => l.kind === 'host').length} host links`;
  };
  page.append(h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Leaf / spine'),
    h('span', { class: 'legend small' }, h('span', { class: 'key finding' }), 'finding ', h('span', { class: 'key ambiguous' }), 'ambiguous ', h('span', { class: 'key ok' }), 'no finding')),
  fabrics.map((fab, n) => [
    fabrics.length > 1 ? h('h3', null, `Fabric ${n + 1}: ${describe(fab)}`) : null,
    h('div', { class: 'fabric-wrap' }, topologySvg({ switches: fab.switches, links: fab.links, hosts: topo.hosts }, idx, selected, select, n))]),
  (topo.nvlink_domains || []).length ? h('h3', null, `NVLink domains (${topo.nvlink_domains.length})`) : null,
  domainsRow(topo, idx, selected, select)));

  const detail = h('div', { class: 'card', id: 'fabric-detail' });
  if (selected) {
    const f = idx.byComponent.get(selected) || idx.ambiguous.get(selected);
    detail.append(h('div', { class: 'card-head' }, h('h2', null, h('span', { class: 'mono', id: 'fabric-selected' }, selected)),
      h('a', { href: '#/fabric', class: 'small' }, 'clear')), findingSummary(f));
    if (selected.startsWith('switch:')) {
      detail.append(h('h3', null, 'Ports'), portsTable(topo, selected.slice(7), idx, select));
    } else if (selected.startsWith('link:')) {
      const [a, b] = ends(selected);
      detail.append(h('p', { class: 'small' }, 'ends: ', h('span', { class: 'mono' }, a), ' ↔ ', h('span', { class: 'mono' }, b)));
    } else if (selected.startsWith('nvlink_domain:')) {
      const d = (topo.nvlink_domains || []).find((x) => 'nvlink_domain:' + x.name === selected);
      if (d) detail.append(h('p', { class: 'small' }, 'hosts: ', h('span', { class: 'mono' }, d.hosts.join(', '))));
    }
    detail.append(h('h3', null, 'Runs whose evidence touched it'));
    try {
      detail.append(await componentRuns(selected));
    } catch (e) {
      detail.append(h('div', { class: 'error' }, 'Error: ' + e.message));
    }
  } else {
    detail.append(h('h2', null, 'Select a component'), h('p', { class: 'muted' }, 'Click a switch for its ports, a port, host tile, uplink or NVLink domain for its runs and evidence.'));
  }
  page.append(detail);

  page.append(h('div', { class: 'card' }, h('h2', null, `Open findings (${findings.length})`),
    findings.length ? h('table', { class: 'fleet', id: 'fabric-findings' },
      h('thead', null, h('tr', null, ['Component', 'Kind', 'Switch port', 'Failed / crossing runs', 'Hosts', 'Users', 'Confidence', 'Last seen'].map((t) => h('th', null, t)))),
      h('tbody', null, findings.map((f) => h('tr', { class: 'finding-row' + (f.component === selected ? ' selected' : ''), 'data-component': f.component, 'data-id': f.id,
        onclick: () => select(f.component) },
      h('td', { class: 'mono small' }, h('a', { href: '#/fabric?' + new URLSearchParams({ c: f.component }) }, f.component),
        (f.ambiguous_with || []).length ? h('span', { class: 'badge warn', title: f.ambiguous_with.join(', ') }, `+${f.ambiguous_with.length} ambiguous`) : null),
      h('td', null, f.kind), h('td', { class: 'mono small' }, f.switch_port || ''),
      h('td', { class: 'num' }, `${f.failed_runs} / ${f.crossing_runs}`), h('td', { class: 'num' }, String(f.hosts_total)),
      h('td', { class: 'num' }, String(f.users_total)), h('td', { class: 'num' }, Number(f.confidence).toFixed(4)),
      h('td', { class: 'nowrap small' }, fmtTime(f.last_seen))))))
      : h('p', { class: 'empty' }, 'No open fabric finding (attribution-blueprint fleet fabric).')));
  return page;
}
