/**
 * Helpers for the operations tests: an admin token for a hub's data folder, a /metrics scrape
 * and a reader for one sample of the Prometheus text format.
 */
import { moonhubCli } from './auth-hub.js';

export function adminToken(dataDir: string, extra: string[] = []): string {
  const r = moonhubCli(['session', 'create', '--admin', '--data', dataDir, ...extra]);
  if (r.status !== 0) throw new Error(`session create --admin failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { token: string }).token;
}

/** The hub's base URL (no /mcp). */
export function baseOf(mcpUrl: string): string {
  return mcpUrl.replace(/\/mcp$/, '');
}

export async function scrape(base: string, token: string | undefined): Promise<string> {
  await new Promise((r) => setImmediate(r));
  const res = await fetch(`${base}/metrics`, {
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${await res.text()}`);
  return res.text();
}

/** The value of the sample `name{labels}` (labels matched as a subset), or 0 when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = new Map<string, string>();
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      have.set(l[1]!, l[2]!);
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) {
      total += Number(m[4]);
      found = true;
    }
  }
  return found ? total : 0;
}

/**
 * The hub's own event-loop delay (p99 and worst, ms) since its /metrics was last read
 * (prom-client resets the histogram on each read): what a test did to the hub's thread, apart
 * from the round trips through the test's own process. Call once before, to reset.
 */
export async function hubLoopDelay(
  mcpUrl: string,
  token: string,
): Promise<{ p99: number; max: number }> {
  const text = await scrape(baseOf(mcpUrl), token);
  const ms = (name: string) => sample(text, `moonhub_nodejs_eventloop_lag_${name}_seconds`) * 1000;
  return { p99: ms('p99'), max: ms('max') };
}
