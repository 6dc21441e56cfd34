// The JSON API (docs/dashboard.md).
export async function api(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const url = '/api/' + path + (q.toString() ? '?' + q : '');
  const res = await fetch(url, { headers: { Accept: 'application/json' } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || `${res.status} ${res.statusText}`);
  return body;
}
