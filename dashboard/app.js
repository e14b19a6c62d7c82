// The moonhub dashboard. Holds no data of its own: it keeps the admin token in this tab's
// sessionStorage and reads everything from the hub's admin API with it. Every value reaches the
// page through textContent, never as HTML.
import { bars, histogram, line } from './charts.js';

const $ = (id) => document.getElementById(id);
const KEY = 'moonhub.admin-token';
const MAX_LIVE = 100;
let token = sessionStorage.getItem(KEY);
let state = null;
let stream = null;
const live = new Map();
const perSecond = new Array(60).fill(0);

function cell(row, text, cls) {
  const td = document.createElement('td');
  if (text instanceof Node) td.appendChild(text);
  else td.textContent = text ?? '';
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function button(text, onClick, cls) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  if (cls) b.className = cls;
  b.addEventListener('click', onClick);
  return b;
}

async function api(path, init = {}) {
  const res = await fetch(path, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
  if (res.status === 401) {
    signOut('The token was refused: sign in with an admin token of this hub.');
    throw new Error('unauthorized');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

function signOut(message) {
  token = null;
  sessionStorage.removeItem(KEY);
  stream?.abort();
  stream = null;
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('live-state').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message ?? '';
}

function bytes(n) {
  if (n == null) return '';
  return n > 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : `${Math.round(n / 1024)} KiB`;
}

function renderPlugins(s) {
  const body = $('plugin-rows');
  body.replaceChildren();
  for (const p of s.plugins) {
    const tr = document.createElement('tr');
    tr.dataset.plugin = p.name;
    cell(tr, p.name, 'mono');
    cell(tr, p.loaded ? 'loaded' : 'failed', p.loaded ? 'ok' : 'bad');
    cell(tr, p.loaded_at ? new Date(p.loaded_at).toLocaleString() : '');
    cell(tr, bytes(p.memory_bytes));
    const where = p.error
      ? `${p.error.file ?? p.entry}${p.error.line ? ':' + p.error.line : ''}`
      : '';
    const msg = p.error?.message ?? '';
    const problems = p.error ? [msg.startsWith(where) ? msg : `${where}: ${msg}`] : [];
    // Definitions that registered with a warning (a name too long to call, ...).
    for (const w of p.warnings ?? []) problems.push(`warning: ${w}`);
    cell(tr, problems.join('\n'), 'error mono');
    cell(
      tr,
      button('Reload', () => reload(p.name)),
    );
    body.appendChild(tr);
  }
}

function renderCatalog(s) {
  const q = $('catalog-filter').value.toLowerCase();
  const rows = [
    ...s.entries.tools.map((t) => ['tool', t.name, t.owner]),
    ...s.entries.prompts.map((p) => ['prompt', p.name, p.owner]),
    ...s.entries.resources.map((r) => ['resource', r.uri, r.owner]),
  ].filter((r) => !q || r.some((v) => v.toLowerCase().includes(q)));
  const body = $('catalog-rows');
  body.replaceChildren();
  for (const [kind, name, owner] of rows) {
    const tr = document.createElement('tr');
    cell(tr, kind, 'muted');
    cell(tr, name, 'mono');
    cell(tr, owner, 'mono');
    body.appendChild(tr);
  }
}

function renderSessions(s) {
  const body = $('session-rows');
  body.replaceChildren();
  for (const p of s.principals) {
    const tr = document.createElement('tr');
    tr.dataset.session = p.session_uuid;
    cell(tr, p.name ? `${p.name} (${p.session_uuid.slice(0, 8)})` : p.session_uuid, 'mono');
    cell(tr, p.role);
    cell(tr, p.agent ?? '');
    cell(tr, p.target ?? '');
    cell(tr, p.sees === null ? 'admin API' : p.sees.join(', ') || 'nothing', 'mono');
    cell(
      tr,
      button('Revoke', () => revoke(p.session_uuid), 'danger'),
    );
    body.appendChild(tr);
  }
}

function renderUpstreams(s) {
  const body = $('upstream-rows');
  body.replaceChildren();
  for (const u of s.upstreams) {
    const tr = document.createElement('tr');
    cell(tr, u.url, 'mono');
    cell(tr, u.plugin, 'mono');
    cell(tr, u.error ? `${u.state}: ${u.error}` : u.state, u.state === 'connected' ? 'ok' : 'warn');
    cell(tr, String(u.connects));
    cell(tr, u.changed.map((c) => `${c.name}${c.refused ? ' (refused)' : ''}`).join(', '), 'warn');
    cell(tr, u.changed.length ? button('Approve (reload plugin)', () => reload(u.plugin)) : '');
    body.appendChild(tr);
  }
}

function callItem(c) {
  const li = document.createElement('li');
  li.dataset.call = String(c.id);
  const state = document.createElement('span');
  state.className = `pill ${c.state}`;
  state.textContent = c.state;
  const what = document.createElement('span');
  what.className = 'what mono';
  what.textContent = `${c.method}${c.name ? ' ' + c.name : ''}`;
  // An execute script's inner call: made by the script, for the agent named beside it.
  if (c.transport === 'execute') what.textContent += ' (via execute)';
  const who = document.createElement('span');
  who.className = 'muted';
  who.textContent = c.agent ?? c.principal ?? c.transport;
  const time = document.createElement('span');
  time.className = 'muted';
  time.textContent =
    c.duration_ms != null ? `${c.duration_ms} ms` : new Date(c.time).toLocaleTimeString();
  li.append(state, what, who, time);
  if (c.error) {
    const err = document.createElement('span');
    err.className = 'error';
    err.textContent = c.error;
    li.appendChild(err);
  }
  return li;
}

function renderLive() {
  const list = $('live-calls');
  const calls = [...live.values()].sort((a, b) => b.id - a.id);
  list.replaceChildren(...calls.map(callItem));
  const errors = calls.filter((c) => c.state === 'error' || c.state === 'tool_error');
  const known = new Set(errors.map((e) => e.id));
  const older = (state?.recent.errors ?? []).filter((e) => !known.has(e.id));
  $('recent-errors').replaceChildren(...[...errors, ...older.reverse()].slice(0, 50).map(callItem));
  $('stat-errors').textContent = String(errors.length + older.length);
  const done = calls.filter((c) => c.duration_ms != null);
  histogram(
    $('chart-latency'),
    done.map((c) => c.duration_ms),
  );
  const byTool = new Map();
  for (const c of calls) if (c.name) byTool.set(c.name, (byTool.get(c.name) ?? 0) + 1);
  bars($('chart-tools'), [...byTool].sort((a, b) => b[1] - a[1]).slice(0, 8));
  line($('chart-rate'), perSecond);
}

function render(s) {
  state = s;
  $('hub-id').textContent = `${s.hub_id} · ${s.version} · auth ${s.auth_mode}`;
  $('stat-plugins').textContent = String(s.plugins.length);
  $('stat-tools').textContent = String(s.entries.tools.length);
  $('stat-sessions').textContent = String(s.principals.length);
  renderPlugins(s);
  renderCatalog(s);
  renderSessions(s);
  renderUpstreams(s);
  bars(
    $('chart-memory'),
    s.plugins
      .filter((p) => p.memory_bytes != null)
      .map((p) => [p.name, p.memory_bytes, bytes(p.memory_bytes)]),
  );
  for (const c of s.recent.calls) if (!live.has(c.id)) live.set(c.id, c);
  trimLive();
  renderLive();
}

function trimLive() {
  const ids = [...live.keys()].sort((a, b) => a - b);
  for (const id of ids.slice(0, Math.max(0, ids.length - MAX_LIVE))) live.delete(id);
}

async function refresh() {
  if (!token) return;
  try {
    render(await api('/admin/dashboard/state'));
  } catch (err) {
    if (err.message !== 'unauthorized') console.warn('refresh failed', err);
  }
}

async function reload(plugin) {
  try {
    await api('/admin/dashboard/reload', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ plugin }),
    });
  } finally {
    await refresh();
  }
}

async function revoke(uuid) {
  if (!confirm(`Revoke session ${uuid}? Its clients are refused from now on.`)) return;
  try {
    await api(`/admin/sessions/${uuid}`, { method: 'DELETE' });
    $('session-error').textContent = '';
  } catch (err) {
    $('session-error').textContent = err.message;
  }
  await refresh();
}

async function createSession(event) {
  event.preventDefault();
  const spec = { agent: $('new-agent').value.trim() };
  if ($('new-target').value.trim()) spec.target = $('new-target').value.trim();
  if ($('new-name').value.trim()) spec.name = $('new-name').value.trim();
  try {
    const issued = await api('/admin/sessions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(spec),
    });
    $('new-token-value').textContent = issued.token;
    $('new-token').hidden = false;
    $('session-error').textContent = '';
    $('session-form').reset();
  } catch (err) {
    $('session-error').textContent = err.message;
  }
  await refresh();
}

/** Reads the live call stream (fetch, so the token goes in a header, not in the URL). */
async function follow() {
  const ctl = new AbortController();
  stream = ctl;
  try {
    const res = await fetch('/admin/dashboard/calls', {
      headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
      signal: ctl.signal,
    });
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    $('live-state').hidden = false;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = frame.split('\n').find((l) => l.startsWith('data: '));
        if (!data) continue;
        const call = JSON.parse(data.slice(6));
        if (call.state === 'running') perSecond[perSecond.length - 1]++;
        live.set(call.id, call);
        trimLive();
        renderLive();
      }
    }
  } catch (err) {
    if (ctl.signal.aborted) return;
    console.warn('live stream ended', err);
  }
  $('live-state').hidden = true;
  if (stream === ctl && token) setTimeout(() => token && follow(), 2000);
}

function start() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  void refresh();
  void follow();
}

$('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  token = $('token').value.trim();
  $('token').value = '';
  const res = await fetch('/admin/dashboard/state', {
    headers: { Authorization: `Bearer ${token}` },
  });
  if (!res.ok) {
    signOut(res.status === 401 ? 'That is not an admin token of this hub.' : `HTTP ${res.status}`);
    return;
  }
  sessionStorage.setItem(KEY, token);
  $('login-error').textContent = '';
  start();
});
$('sign-out').addEventListener('click', () => signOut());
$('session-form').addEventListener('submit', createSession);
$('new-token-close').addEventListener('click', () => {
  $('new-token-value').textContent = '';
  $('new-token').hidden = true;
});
$('catalog-filter').addEventListener('input', () => state && renderCatalog(state));
setInterval(() => {
  perSecond.shift();
  perSecond.push(0);
  if (state) line($('chart-rate'), perSecond);
}, 1000);
setInterval(() => void refresh(), 5000);
if (token) start();
