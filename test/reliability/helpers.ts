/**
 * Shared parts of the reliability tests: a scratch folder with plugins and a config, a real hub
 * on it, and an honest client whose latency is measured while an attack runs.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { connectHttpClient } from '../helpers/mcp-client.js';

// The scratch folder moved to test/helpers (the plugin hub set-up uses it); many tests import it here.
export { scratch, type Scratch } from '../helpers/scratch.js';

export function text(result: { content?: unknown }): string {
  return ((result.content ?? []) as { type: string; text?: string }[])
    .map((c) => c.text ?? '')
    .join('');
}

/** The resident set of a process, in MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : 0;
}

/**
 * CPU time a process (or its thread `tid`: the main thread's is the pid) has used so far, user
 * and system, in ms (Linux /proc, 10 ms ticks).
 */
export function cpuMs(pid: number, tid?: number): number {
  const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
  const stat = readFileSync(path, 'utf8');
  // The fields after the command name (which may hold spaces) start after the last ')'.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Latencies of an honest client calling `tool` in a loop until stopped. */
export interface Honest {
  stop(): Promise<{
    count: number;
    errors: number;
    messages: string[];
    p50: number;
    p99: number;
    max: number;
  }>;
}

/**
 * Starts an honest client on its own connection that calls `tool` back to back (a short pause
 * between calls), so a test can assert it was served while something hostile ran.
 */
export async function honestClient(url: string, tool: string): Promise<Honest> {
  const { client } = await connectHttpClient(url, 'modern');
  const times: number[] = [];
  let errors = 0;
  const messages: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const r = await client.callTool({ name: tool, arguments: {} });
        if (r.isError) {
          errors++;
          messages.push(text(r));
        }
      } catch (err) {
        errors++;
        messages.push(String(err));
      }
      times.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await client.close();
      const sorted = [...times].sort((a, b) => a - b);
      const at = (q: number) =>
        sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
      return {
        count: times.length,
        errors,
        messages,
        p50: at(0.5),
        p99: at(0.99),
        max: sorted.at(-1) ?? 0,
      };
    },
  };
}

export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ isError: boolean; text: string }> {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError === true, text: text(r) };
}

/**
 * The longest a hub's `/healthz` took to answer while `work` ran, in ms (asked again every
 * `everyMs`): how long the hub's thread was held.
 */
export async function longestHealthWait(
  mcpUrl: string,
  work: Promise<unknown>,
  everyMs = 5,
): Promise<number> {
  const health = mcpUrl.replace(/\/mcp$/, '/healthz');
  let done = false;
  let longest = 0;
  void work.finally(() => (done = true));
  while (!done) {
    const t0 = performance.now();
    await fetch(health);
    longest = Math.max(longest, performance.now() - t0);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return longest;
}

/** Every tool name a client sees, page after page. */
export async function allToolNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((tool) => tool.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return names;
}
