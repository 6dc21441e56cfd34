// Hash router: #/runs?filters, #/runs/<id>, #/fleet?window, #/fabric?c=<component>.
import { api } from './api.js';
import { h } from './util.js';
import { renderRuns } from './runs.js';
import { renderVerdict } from './verdict.js';
import { renderFleet } from './fleet.js';
import { renderFabric } from './fabric.js';

const app = document.getElementById('app');
let facets = null;

export function navigate(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v) q.set(k, v);
  const hash = '#' + path + (q.toString() ? '?' + q : '');
  if (location.hash !== hash) location.hash = hash;
  else route();
}

async function route() {
  const raw = location.hash.replace(/^#/, '') || '/runs';
  const [path, query] = raw.split('?');
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  const parts = path.split('/').filter(Boolean);
  for (const a of document.querySelectorAll('[data-nav]'))
    a.classList.toggle('active', a.dataset.nav === (parts[0] || 'runs'));
  try {
    if (!facets) {
      facets = await api('facets');
      document.getElementById('store').textContent = `${facets.runs} runs`;
    }
    let view;
    if (parts[0] === 'runs' && parts[1]) view = await renderVerdict(parts[1]);
    else if (parts[0] === 'fleet') view = await renderFleet(params, facets);
    else if (parts[0] === 'fabric') view = await renderFabric(params);
    else view = await renderRuns(params, facets);
    app.replaceChildren(view);
    document.body.dataset.page = parts[0] === 'runs' && parts[1] ? 'verdict' : parts[0] || 'runs';
  } catch (e) {
    app.replaceChildren(h('div', { class: 'error' }, 'Error: ' + e.message));
  }
}

window.addEventListener('hashchange', route);
route();
