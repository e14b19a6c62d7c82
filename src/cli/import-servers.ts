/**
 * `moonhub import FILE`: copies an MCP client's server list (`mcpServers` of Claude Desktop,
 * Claude Code and Cursor, `servers` of VS Code) into the config's `upstreams`, keeping the
 * config file's comments. Names already there are kept unless `--replace`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import { Document, parseDocument } from 'yaml';
import type { UpstreamConfig } from '../config/config.js';
import { checkAgainstSchema } from '../config/validate.js';

const KEPT = ['type', 'command', 'args', 'env', 'cwd', 'url', 'headers', 'disabled'] as const;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

export interface ImportReport {
  added: string[];
  replaced: string[];
  kept: string[];
  /** Fields of the client's entries moonhub has no use for, per server. */
  dropped: Record<string, string[]>;
}

/** The servers of a client's file, by name, reduced to what an upstream entry holds. */
export function serversOf(file: string): {
  servers: Record<string, UpstreamConfig>;
  dropped: Record<string, string[]>;
} {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${file} as JSON: ${(err as Error).message}`);
  }
  const d = data as Record<string, unknown>;
  const list = (d.mcpServers ??
    d.servers ??
    (d.mcp as Record<string, unknown> | undefined)?.servers) as
    Record<string, Record<string, unknown>> | undefined;
  if (list === undefined || typeof list !== 'object' || Array.isArray(list))
    throw new Error(`${file} has no "mcpServers" (or VS Code "servers") object`);
  const servers: Record<string, UpstreamConfig> = {};
  const dropped: Record<string, string[]> = {};
  for (const [name, entry] of Object.entries(list)) {
    if (!NAME.test(name))
      throw new Error(`server name '${name}' is not a moonhub name (letters, digits and _ . : -)`);
    if (entry === null || typeof entry !== 'object')
      throw new Error(`server '${name}' is not an object`);
    const out: Record<string, unknown> = {};
    for (const key of KEPT) if (entry[key] !== undefined) out[key] = entry[key];
    const extra = Object.keys(entry).filter((k) => !(KEPT as readonly string[]).includes(k));
    if (extra.length > 0) dropped[name] = extra;
    servers[name] = out as UpstreamConfig;
  }
  return { servers, dropped };
}

/** Merges the servers of `from` into the config file `into` (made when missing). */
export function importServers(from: string, into: string, replace: boolean): ImportReport {
  const { servers, dropped } = serversOf(from);
  const yaml = extname(into).toLowerCase() !== '.json';
  const text = existsSync(into) ? readFileSync(into, 'utf8') : yaml ? '' : '{}';
  // An empty file has no contents to add to: a new document (block style) instead.
  const doc = text.trim() === '' ? new Document({}) : parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`${into}: ${doc.errors[0]!.message}`);
  const report: ImportReport = { added: [], replaced: [], kept: [], dropped };
  for (const [name, up] of Object.entries(servers)) {
    const exists = doc.hasIn(['upstreams', name]);
    if (exists && !replace) {
      report.kept.push(name);
      continue;
    }
    doc.setIn(['upstreams', name], doc.createNode(up));
    (exists ? report.replaced : report.added).push(name);
  }
  // Checked before writing, so a bad entry never lands in the file (env refs stay unexpanded).
  checkAgainstSchema(doc.toJS(), 'config.schema.json', `config file ${into}`);
  writeFileSync(into, yaml ? doc.toString() : `${JSON.stringify(doc.toJS(), null, 2)}\n`);
  return report;
}
