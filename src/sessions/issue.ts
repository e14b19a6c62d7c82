/**
 * Issuing a session, shared by `moonhub session create` and the admin API: the request is
 * checked against the config (names the config does not define are refused when it defines
 * that kind), the session is stored, and the answer carries ready MCP client entries: over HTTP
 * (with the bearer token), over stdio into the running hub (`moonhub connect URL`, the token in
 * `MOONHUB_TOKEN`), and a standalone stdio hub (`moonhub serve --stdio --session UUID`).
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HubConfig } from '../config/config.js';
import type { SessionRecord, SessionStore } from './store.js';
import { clientSetup, type ClientSetup } from './client-setup.js';

export const BIN = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../..',
  'bin',
  'moonhub.js',
);

export interface SessionRequest {
  agent: string;
  target?: string;
  name?: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** Why a request cannot be issued, or undefined when it can. */
export function sessionRequestProblem(config: HubConfig, req: SessionRequest): string | undefined {
  if (typeof req.agent !== 'string' || !NAME.test(req.agent))
    return "'agent' must be a name: letters, digits and _ . : -, at most 64 characters";
  if (req.target !== undefined && (typeof req.target !== 'string' || !NAME.test(req.target)))
    return "'target' must be a name: letters, digits and _ . : -, at most 64 characters";
  if (req.name !== undefined && (typeof req.name !== 'string' || req.name.length > 200))
    return "'name' must be a string of at most 200 characters";
  if (config.agents !== undefined && !Object.hasOwn(config.agents, req.agent))
    return `agent '${req.agent}' is not defined in the config (agents: ${Object.keys(config.agents).join(', ') || 'none'})`;
  if (
    req.target !== undefined &&
    config.targets !== undefined &&
    !Object.hasOwn(config.targets, req.target)
  )
    return `target '${req.target}' is not defined in the config (targets: ${Object.keys(config.targets).join(', ') || 'none'})`;
  return undefined;
}

/** How `serve --stdio` must be started to serve the same hub as this one. */
export interface StdioLaunch {
  dataDir: string;
  configFile?: string | undefined;
  pluginDirs?: string[];
  hubId?: string;
}

export interface IssuedSession {
  session_uuid: string;
  token: string;
  url: string;
  agent: string;
  target?: string;
  name?: string;
  mcp_config: {
    http: { type: 'http'; url: string; headers: { Authorization: string } };
    /** Joins the running hub: `moonhub connect URL`, the token in the environment. */
    stdio: { type: 'stdio'; command: string; args: string[]; env: { MOONHUB_TOKEN: string } };
    /**
     * A hub of its own in the client's process tree (`serve --stdio --session`): same plugins
     * and view, but no running hub needed, and so no messages with the running hub's agents.
     */
    stdio_standalone: { type: 'stdio'; command: string; args: string[] };
  };
  /** The same over HTTP for Claude Code, VS Code, Cursor and the Inspector. */
  clients: ClientSetup;
}

export function issueSession(
  store: SessionStore,
  hubId: string,
  req: SessionRequest,
  url: string,
  launch: StdioLaunch,
): IssuedSession {
  const { record, token } = store.create({ hub_id: hubId, role: 'agent', ...req });
  return describeIssued(record, token, url, launch);
}

function describeIssued(
  record: SessionRecord,
  token: string,
  url: string,
  launch: StdioLaunch,
): IssuedSession {
  const args = [
    BIN,
    'serve',
    '--stdio',
    '--session',
    record.session_uuid,
    '--data',
    launch.dataDir,
  ];
  if (launch.configFile !== undefined) args.push('--config', launch.configFile);
  for (const dir of launch.pluginDirs ?? []) args.push('--plugins', dir);
  if (launch.hubId !== undefined) args.push('--hub-id', launch.hubId);
  const out: IssuedSession = {
    session_uuid: record.session_uuid,
    token,
    url,
    agent: record.agent!,
    mcp_config: {
      http: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } },
      stdio: {
        type: 'stdio',
        command: process.execPath,
        args: [BIN, 'connect', url],
        env: { MOONHUB_TOKEN: token },
      },
      stdio_standalone: { type: 'stdio', command: process.execPath, args },
    },
    clients: clientSetup(`moonhub-${record.agent!}`, url, token),
  };
  if (record.target !== undefined) out.target = record.target;
  if (record.name !== undefined) out.name = record.name;
  return out;
}
