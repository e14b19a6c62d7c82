/**
 * The dashboard's data, behind an admin token (the page itself holds nothing):
 *   GET  /admin/dashboard/state    plugins, entries and owners, principals and their views,
 *                                  upstreams and drift, recent calls and errors
 *   GET  /admin/dashboard/calls    the live call stream (SSE; bounded viewers)
 *   POST /admin/dashboard/reload   {plugin}: reload a plugin (approves its pinned upstream tools)
 * Sessions are created, listed and revoked through the admin API (/admin/sessions). Upstream
 * addresses and messages are redacted as `hub_status` does: no credentials reach the page.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from '../registry/registry.js';
import type { OwnerFilter } from '../registry/types.js';
import type { PluginStatus } from '../plugins/plugin-host.js';
import type { ProxyStatus } from '../upstream/proxy.js';
import { redactUrl, StatusRedactor } from '../upstream/status-redact.js';
import type { LiveCalls } from '../observe/live-calls.js';
import { afterTokenWait, requireAdmin, sendJson, type Route } from '../observe/operator-routes.js';
import { packageVersion } from '../server/protocol.js';
import { readJsonBody } from '../json-body.js';
import { bearerToken } from '../auth/challenge.js';

export const DASHBOARD_API = '/admin/dashboard/';
const MAX_BODY = 4096;

export interface DashboardSources {
  registry: Registry;
  plugins: {
    status(): PluginStatus[];
    memoryUsage(): Map<string, number>;
    reload(name: string): Promise<boolean>;
  };
  pluginDirs: readonly string[];
  upstreams: () => ProxyStatus[];
  /** This hub's sessions (never tokens), or [] without a sessions database. */
  sessions: () => {
    session_uuid: string;
    role: string;
    agent?: string;
    target?: string;
    name?: string;
    created_at: string;
    revoked_at?: string;
  }[];
  viewOf: (principal: string) => OwnerFilter;
  live: LiveCalls;
  isAdminToken: (token: string) => boolean;
  /** Redis mode: waited for before the admin token is checked (afterTokenWait). */
  beforeCheck?: () => Promise<void>;
  guard: (req: IncomingMessage) => { status: number; message: string } | undefined;
  authMode: string;
  /** Counts a refused request (metrics), by limit. */
  refused?: (limit: string) => void;
}

function entriesOf(registry: Registry) {
  const owners = [...registry.owners()].sort();
  const tools: { name: string; owner: string }[] = [];
  const prompts: { name: string; owner: string }[] = [];
  const resources: { uri: string; owner: string }[] = [];
  for (const owner of owners) {
    const mine = (o: string) => o === owner;
    for (const t of registry.listTools(mine)) tools.push({ name: t.name, owner });
    for (const p of registry.listPrompts(mine)) prompts.push({ name: p.name, owner });
    for (const r of registry.listResources(mine)) resources.push({ uri: r.uri, owner });
    for (const r of registry.listResourceTemplates(mine))
      resources.push({ uri: r.uriTemplate, owner });
  }
  return { owners, tools, prompts, resources };
}

function state(src: DashboardSources) {
  const redact = new StatusRedactor(src.pluginDirs);
  const memory = src.plugins.memoryUsage();
  const plugins = src.plugins.status().map((p) => ({
    name: p.name,
    entry: redact.file(p.entry),
    loaded: p.loaded,
    loaded_at: p.loadedAt ?? null,
    memory_bytes: memory.get(p.name) ?? null,
    error:
      p.error === undefined
        ? null
        : {
            message: redact.text(p.error.message),
            file: p.error.file === undefined ? null : redact.file(p.error.file),
            line: p.error.line ?? null,
          },
    warnings: (p.warnings ?? []).map((w) => redact.text(w)),
  }));
  const entries = entriesOf(src.registry);
  const principals = src
    .sessions()
    .filter((s) => s.revoked_at === undefined)
    .map((s) => {
      // An admin session sees only the admin API; an agent's view may be "everything".
      if (s.role === 'admin') return { ...s, sees: null };
      const view = src.viewOf(`session:${s.session_uuid}`) as OwnerFilter | undefined;
      return { ...s, sees: view === undefined ? entries.owners : entries.owners.filter(view) };
    });
  const upstreams = src.upstreams().map((u) => ({
    url: redactUrl(u.url),
    plugin: u.owner,
    prefix: u.prefix,
    state: u.state,
    connects: u.connects,
    tools: u.tools,
    error: u.error === undefined ? null : redact.text(u.error),
    changed: u.changed,
  }));
  return {
    hub_id: src.registry.hubId,
    version: packageVersion(),
    auth_mode: src.authMode,
    plugins,
    entries,
    principals,
    upstreams,
    recent: src.live.recent(),
  };
}

function reload(src: DashboardSources, req: IncomingMessage, res: ServerResponse): void {
  readJsonBody(
    req,
    MAX_BODY,
    (body) => {
      const plugin = (body as { plugin?: unknown } | null)?.plugin;
      if (typeof plugin !== 'string') return sendJson(res, 400, { error: 'give {"plugin": NAME}' });
      src.plugins.reload(plugin).then(
        (known) => {
          if (!known) return sendJson(res, 404, { error: `no plugin named ${plugin}` });
          const p = src.plugins.status().find((s) => s.name === plugin);
          sendJson(res, 200, { plugin, loaded: p?.loaded ?? false });
        },
        () => sendJson(res, 500, { error: 'the reload failed' }),
      );
    },
    (_status, why) => sendJson(res, 400, { error: why }),
  );
}

export function dashboardApi(src: DashboardSources): Route {
  return (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    if (!path.startsWith(DASHBOARD_API)) return false;
    const bad = src.guard(req);
    if (bad !== undefined) {
      req.resume();
      sendJson(res, bad.status, { error: bad.message });
      return true;
    }
    afterTokenWait(src.beforeCheck, res, () => {
      if (!requireAdmin(req, res, src.isAdminToken, src.refused)) req.resume();
      else answer(src, req, res, path.slice(DASHBOARD_API.length));
    });
    return true;
  };
}

/** A request of the dashboard's API whose admin token passed: its route. */
function answer(src: DashboardSources, req: IncomingMessage, res: ServerResponse, rest: string) {
  if (rest === 'state' && req.method === 'GET') {
    req.resume();
    sendJson(res, 200, state(src));
  } else if (rest === 'calls' && req.method === 'GET') {
    req.resume();
    // The token passed requireAdmin; the stream lasts while it stays an admin's (recheck).
    const token = bearerToken(req) ?? '';
    if (!src.live.stream(res, () => src.isAdminToken(token)))
      sendJson(res, 503, { error: `at most ${src.live.maxViewers} live streams at once` });
  } else if (rest === 'reload' && req.method === 'POST') {
    reload(src, req, res);
  } else {
    req.resume();
    sendJson(res, 404, { error: 'not found' });
  }
}
