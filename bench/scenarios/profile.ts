/**
 * `--profile`: runs a hub under `node --cpu-prof` in each era, loads it with the echo tools/call
 * for a fixed time, and reports where the CPU time went per request (bench/results/profile.json);
 * the bare node:http server is profiled the same way, as the floor.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub, startScript, type Proc } from '../lib/proc.js';
import { summarizeProfile, type ProfileSummary } from '../lib/cpu-profile.js';
import { echoCall, openSession, spec, type RequestSpec } from '../lib/rpc.js';
import { runWrk } from '../lib/wrk.js';
import { toolsPlugin } from './scale.js';
import { ECHO_PLUGINS, EXECUTE_SCRIPT, startProxyHub } from './throughput.js';

export interface EraProfile extends ProfileSummary {
  /**
   * `bare` is the node:http ceiling, profiled the same way for comparison; `proxy` a hub calling
   * the SDK echo server through mcp.proxy (the upstream's own time is not in it).
   */
  era: 'bare' | 'legacy' | 'modern' | 'proxy' | 'proxy-moonhub' | 'execute' | 'list10k';
  requests: number;
  rps: number;
  /** Active CPU µs per request, and per area. */
  usPerRequest: number;
  areaUsPerRequest: Record<string, number>;
  file: string;
}

export async function profileEras(
  seconds: number,
  procs: Proc[],
  log: (line: string) => void,
  only?: ReadonlySet<string>,
): Promise<EraProfile[]> {
  const out: EraProfile[] = [];
  for (const era of [
    'bare',
    'modern',
    'legacy',
    'proxy',
    'proxy-moonhub',
    'execute',
    'list10k',
  ] as const) {
    if (only !== undefined && !only.has(era)) continue;
    const dir = mkdtempSync(join(tmpdir(), `moonhub-bench-prof-${era}-`));
    const nodeArgs = ['--cpu-prof', '--cpu-prof-dir', dir];
    let upstream: Proc | undefined;
    if (era === 'proxy') {
      upstream = await startScript('sdk-upstream', 'sdk.js', ['session']);
      procs.push(upstream);
    } else if (era === 'proxy-moonhub') {
      // The upstream is a moonhub serving the Lua echo (the hub-proxied row's pair).
      upstream = await startHub('moonhub-upstream', { plugins: [ECHO_PLUGINS], watch: false });
      procs.push(upstream);
    }
    const t0 = performance.now();
    let hub: Proc;
    if (era === 'bare') hub = await startScript('bare-prof', 'bare.js', [], nodeArgs);
    else if (era === 'proxy' || era === 'proxy-moonhub') {
      const started = await startProxyHub(upstream!.url, 10_000, procs, nodeArgs);
      if (!('hub' in started)) {
        log(`profile proxy: skipped, ${started.na} (${started.note})`);
        await upstream!.stop();
        continue;
      }
      hub = started.hub;
    } else {
      hub = await startHub(`moonhub-prof-${era}`, {
        plugins: [era === 'list10k' ? toolsPlugin(10_000) : ECHO_PLUGINS],
        watch: false,
        nodeArgs,
      });
    }
    procs.push(hub);
    const s = await requestOf(era, hub.url);
    // execute is measured as its row is: one connection, one script at a time.
    const connections = era === 'execute' ? 1 : 50;
    // The proxy (hub and SDK upstream) needs ~5 s of load before its CPU per call settles.
    await runWrk(s, { connections, seconds: era.startsWith('proxy') ? 6 : 2 });
    const from = performance.now() - t0;
    const sample = await runWrk(s, { connections, seconds });
    const to = performance.now() - t0;
    await hub.stop();
    await upstream?.stop();
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error(`no .cpuprofile written in ${dir}`);
    // The profile clock starts a little after spawn, so the window is slightly late: safe side.
    const sum = summarizeProfile(readFileSync(join(dir, file), 'utf8'), from, to);
    const per = (ms: number) => Math.round(((ms * 1000) / sample.requests) * 100) / 100;
    const areaUsPerRequest: Record<string, number> = {};
    for (const a of sum.areas) areaUsPerRequest[a.area] = per(a.ms);
    out.push({
      era,
      requests: sample.requests,
      rps: Math.round(sample.rps),
      usPerRequest: per(sum.activeMs),
      areaUsPerRequest,
      file: join(dir, file),
      ...sum,
    });
    log(`profile ${era}: ${per(sum.activeMs)} µs CPU per request (${join(dir, file)})`);
  }
  return out;
}

async function requestOf(era: EraProfile['era'], url: string): Promise<RequestSpec> {
  switch (era) {
    case 'bare':
      return echoCall(url, 'legacy');
    case 'proxy':
    case 'proxy-moonhub':
      return echoCall(url, 'modern', undefined, 'up.echo');
    case 'execute':
      return spec(url, 'modern', 'tools/call', {
        name: 'execute',
        arguments: { code: EXECUTE_SCRIPT },
      });
    case 'list10k':
      return spec(url, 'modern', 'tools/list', {});
    default:
      return echoCall(url, era, era === 'legacy' ? await openSession(url) : undefined);
  }
}
