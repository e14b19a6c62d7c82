/**
 * The admin REST API, the `moonhub session` commands over HTTP, for this hub's sessions:
 *   GET    /admin/sessions          list (never tokens)
 *   POST   /admin/sessions          {agent, target?, name?} -> 201 with the token, shown once
 *   DELETE /admin/sessions/{uuid}   revoke
 * Every request needs an admin session's token (`moonhub session create --admin`), whatever the
 * MCP endpoint's auth mode, and passes the same Host/Origin check as the MCP endpoint.
 * With `cluster.redis` a POST or DELETE answers once its change is merged into Redis (and so
 * announced to every instance), or says in its body that Redis did not confirm it in time.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { HubConfig } from '../config/config.js';
import { bearerToken, challenge } from '../server/bearer.js';
import {
  issueSession,
  sessionRequestProblem,
  type SessionRequest,
  type StdioLaunch,
} from './issue.js';
import type { SessionStore } from './store.js';
import type { MergeOutcome } from './redis-sync.js';
import { readJsonBody } from '../json-body.js';

export const ADMIN_PREFIX = '/admin/';
const MAX_BODY = 64 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface AdminApiOptions {
  /** The sessions database; undefined while it does not exist (then no admin token does). */
  store: () => SessionStore | undefined;
  hubId: string;
  /** The current scoping config (names a new session may use). */
  config: () => HubConfig;
  /** The MCP endpoint URL put in issued sessions. */
  url: () => string;
  launch: StdioLaunch;
  /** The MCP endpoint's Host/Origin check. */
  guard: (headers: IncomingHttpHeaders) => { status: number; message: string } | undefined;
  onError?: (err: unknown) => void;
  /**
   * Sessions shared through Redis: resolves once the change just made to the session is merged
   * into Redis, or when that failed or took too long (bounded by the caller).
   */
  replicated?: (uuid: string) => Promise<MergeOutcome>;
  /** A change Redis did not confirm (for the log). */
  onUnreplicated?: (uuid: string, outcome: MergeOutcome) => void;
  /** Redis mode: waits for what is on the sockets before a token is checked (auth/authenticate). */
  beforeCheck?: () => Promise<void>;
}

const UNREPLICATED =
  'Redis did not confirm this change within cluster.limits.command_timeout_ms: this instance ' +
  'applied it, the others will when Redis answers again (it is pushed on reconnection)';

/**
 * Answers `body` once the change to `uuid` reached Redis (Redis mode), with `replicated: true`;
 * or `replicated: false` and a warning when Redis did not confirm it in time. Never hangs.
 */
function sendReplicated(
  opts: AdminApiOptions,
  res: ServerResponse,
  status: number,
  uuid: string,
  body: object,
): void {
  if (opts.replicated === undefined) return send(res, status, body);
  void opts.replicated(uuid).then(
    (outcome) => {
      if (outcome !== 'merged') opts.onUnreplicated?.(uuid, outcome);
      send(
        res,
        status,
        outcome === 'merged'
          ? { ...body, replicated: true }
          : { ...body, replicated: false, warning: UNREPLICATED },
      );
    },
    (err: unknown) => {
      opts.onError?.(err);
      send(res, status, { ...body, replicated: false, warning: UNREPLICATED });
    },
  );
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function problem(
  res: ServerResponse,
  status: number,
  message: string,
  headers?: Record<string, string>,
): void {
  send(res, status, { error: message }, headers);
}

/** True when the request carries an admin token of this hub; otherwise answers 401. */
function authorized(
  hubId: string,
  req: IncomingMessage,
  res: ServerResponse,
  store: SessionStore | undefined,
): store is SessionStore {
  const token = bearerToken(req);
  const rec = token && store ? store.verify(token, hubId) : undefined;
  if (rec?.role === 'admin') return true;
  const params =
    token === undefined
      ? { realm: 'moonhub-admin' }
      : { realm: 'moonhub-admin', error: 'invalid_token' as const };
  problem(res, 401, token === undefined ? 'an admin token is required' : 'invalid admin token', {
    'WWW-Authenticate': challenge(params),
  });
  return false;
}

/** POST /sessions: validates the JSON body and issues a session. */
function create(
  opts: AdminApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
  store: SessionStore,
): void {
  if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
    problem(res, 415, 'Content-Type must be application/json');
    req.resume();
    return;
  }
  readJsonBody(
    req,
    MAX_BODY,
    (body) => createFrom(opts, res, store, body),
    (status, why) => problem(res, status, why),
  );
}

/** The parsed body of POST /sessions: checked, then the session issued. */
function createFrom(
  opts: AdminApiOptions,
  res: ServerResponse,
  store: SessionStore,
  body: unknown,
): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return problem(res, 400, 'the body must be a JSON object {agent, target?, name?}');
  const unknown = Object.keys(body).filter((k) => !['agent', 'target', 'name'].includes(k));
  if (unknown.length > 0) return problem(res, 400, `'${unknown[0]}' is not a known field`);
  const spec = body as SessionRequest;
  const why = sessionRequestProblem(opts.config(), spec);
  if (why !== undefined) return problem(res, 400, why);
  try {
    const issued = issueSession(store, opts.hubId, spec, opts.url(), opts.launch);
    sendReplicated(opts, res, 201, issued.session_uuid, issued);
  } catch (err) {
    opts.onError?.(err);
    problem(res, 500, 'internal error');
  }
}

/** An admin request that passed the Host/Origin check: its token, then its route. */
function route(opts: AdminApiOptions, req: IncomingMessage, res: ServerResponse, path: string) {
  const { hubId } = opts;
  const store = opts.store();
  if (!authorized(hubId, req, res, store)) {
    req.resume();
    return;
  }
  const rest = path.slice(ADMIN_PREFIX.length);
  if (rest === 'sessions') {
    if (req.method === 'GET') {
      send(res, 200, { sessions: store.list(hubId) });
      req.resume();
    } else if (req.method === 'POST') create(opts, req, res, store);
    else {
      problem(res, 405, 'use GET or POST', { Allow: 'GET, POST' });
      req.resume();
    }
    return;
  }
  const m = /^sessions\/([^/]+)$/.exec(rest);
  if (m !== null) {
    if (req.method !== 'DELETE') problem(res, 405, 'use DELETE', { Allow: 'DELETE' });
    else if (!UUID.test(m[1]!) || !store.revoke(m[1]!, hubId))
      problem(res, 404, 'no active session with this id');
    else sendReplicated(opts, res, 200, m[1]!, { revoked: m[1] });
    req.resume();
    return;
  }
  problem(res, 404, 'not found');
  req.resume();
}

/** Returns a router for the HTTP server's `otherRoutes`: true when the request was the API's. */
export function adminApi(
  opts: AdminApiOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const failed = (res: ServerResponse, err: unknown) => {
    opts.onError?.(err);
    if (!res.headersSent) problem(res, 500, 'internal error');
  };
  return (req, res) => {
    // Every MCP request passes here first: decide on the raw URL, split it only for the API's.
    const url = req.url ?? '/';
    if (!url.startsWith(ADMIN_PREFIX)) return false;
    const path = url.split('?')[0]!;
    try {
      const verdict = opts.guard(req.headers);
      if (verdict !== undefined) {
        problem(res, verdict.status, verdict.message);
        req.resume();
        return true;
      }
      if (opts.beforeCheck === undefined) route(opts, req, res, path);
      else
        opts.beforeCheck().then(
          () => {
            try {
              route(opts, req, res, path);
            } catch (err) {
              failed(res, err);
            }
          },
          (err: unknown) => failed(res, err),
        );
    } catch (err) {
      failed(res, err);
    }
    return true;
  };
}
