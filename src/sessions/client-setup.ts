/**
 * Ready-to-paste set-up of the MCP clients most people use, for one hub endpoint (and bearer
 * token, when the hub wants one): printed by `moonhub dev` at start and returned by
 * `session create` next to its `mcp_config`.
 */
import { shellWord } from '../shell-words.js';

export interface ClientSetup {
  /** A shell command for Claude Code. */
  claude_code: string;
  /** The `.vscode/mcp.json` file's content. */
  vscode: { servers: Record<string, Record<string, unknown>> };
  /** The `.cursor/mcp.json` (or `~/.cursor/mcp.json`) file's content. */
  cursor: { mcpServers: Record<string, Record<string, unknown>> };
  /** A shell command opening the MCP Inspector on the endpoint. */
  inspector: string;
}

export function clientSetup(name: string, url: string, token?: string): ClientSetup {
  const headers = token === undefined ? undefined : { Authorization: `Bearer ${token}` };
  const header = token === undefined ? [] : ['--header', `Authorization: Bearer ${token}`];
  const claude = ['claude', 'mcp', 'add', '--transport', 'http', name, url, ...header];
  const inspector = [
    'npx',
    '@modelcontextprotocol/inspector',
    '--transport',
    'http',
    '--server-url',
    url,
    ...header,
  ];
  return {
    claude_code: claude.map(shellWord).join(' '),
    vscode: { servers: { [name]: { type: 'http', url, ...(headers ? { headers } : {}) } } },
    cursor: { mcpServers: { [name]: { url, ...(headers ? { headers } : {}) } } },
    inspector: inspector.map(shellWord).join(' '),
  };
}

/** The set-up as text for a person at a terminal. */
export function clientSetupText(setup: ClientSetup): string {
  return [
    'Claude Code:',
    `  ${setup.claude_code}`,
    'VS Code (.vscode/mcp.json):',
    `  ${JSON.stringify(setup.vscode)}`,
    'Cursor (.cursor/mcp.json):',
    `  ${JSON.stringify(setup.cursor)}`,
    'MCP Inspector:',
    `  ${setup.inspector}`,
  ].join('\n');
}
