/**
 * Raw 2026-07-28 tools/call over fetch against a real hub, and the latency statistics the
 * reliability tests assert while an attack runs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CallAnswer {
  ms: number;
  isError: boolean;
  text: string;
  /** The JSON-RPC error's message, when the hub answered with one. */
  rpcError?: string;
}

let nextId = 1;

/** One stateless tools/call; resolves with the time it took and the result's text. */
export async function callTool(
  url: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallAnswer> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  const body = await res.text();
  const ms = performance.now() - started;
  const json = JSON.parse(
    body.startsWith('event:') || body.startsWith('data:') ? lastData(body) : body,
  ) as {
    result?: { isError?: boolean; content?: { text?: string }[] };
    error?: { message: string };
  };
  if (json.error)
    return { ms, isError: true, text: json.error.message, rpcError: json.error.message };
  const text = (json.result?.content ?? []).map((c) => c.text ?? '').join('');
  return { ms, isError: json.result?.isError === true, text };
}

function lastData(sse: string): string {
  const lines = sse.split('\n').filter((l) => l.startsWith('data:'));
  return lines[lines.length - 1]!.slice(5).trim();
}

/** The p-th percentile (0..100) of `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Calls `name` one at a time until `until` resolves (at most `maxCalls`), recording each latency:
 * the honest client measured while an attack runs.
 */
export async function probeWhile(
  until: Promise<unknown>,
  url: string,
  name: string,
  args: Record<string, unknown> = {},
  maxCalls = 2000,
): Promise<{ latencies: number[]; failures: string[] }> {
  let done = false;
  void until.finally(() => (done = true));
  const latencies: number[] = [];
  const failures: string[] = [];
  while (!done && latencies.length + failures.length < maxCalls) {
    const r = await callTool(url, name, args);
    if (r.isError) failures.push(r.text);
    else latencies.push(r.ms);
    await new Promise((res) => setTimeout(res, 5));
  }
  return { latencies, failures };
}

/** A scratch plugins folder holding `files` (name -> Lua source). */
export function pluginsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-rel-'));
  for (const [name, code] of Object.entries(files)) writeFileSync(join(dir, name), code);
  return dir;
}

/** A config file next to a scratch folder; returns its path. */
export function configFile(config: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'moonhub-rel-cfg-'));
  const path = join(dir, 'moonhub.json');
  writeFileSync(path, JSON.stringify(config));
  return path;
}
