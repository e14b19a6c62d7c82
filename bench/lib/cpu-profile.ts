/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and says where the time went: self time by
 * area of the code (our server, registry, Lua bridge, the wasm VM, Node's HTTP stack, ...) and
 * the functions that cost most, over a chosen window of the profile.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  windowMs: number;
  activeMs: number;
  /** Self time per area, in ms over the window, largest first. */
  areas: { area: string; ms: number; share: number }[];
  top: { fn: string; area: string; ms: number; share: number }[];
}

export function areaOf(fn: string, url: string): string {
  if (fn === '(idle)') return 'idle';
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)') return 'V8/native (program)';
  // The send syscall; on loopback it also runs the receiving side of TCP in the kernel.
  if (url === '' && (fn === 'writev' || fn === 'writeUtf8String' || fn === 'writeBuffer'))
    return 'socket writes (kernel, writev)';
  if (url.startsWith('wasm://') || url.endsWith('.wasm')) return 'Lua VM (wasm)';
  if (url.includes('/src/server/')) return 'moonhub server (src/server)';
  if (url.includes('/src/registry/')) return 'moonhub registry (src/registry)';
  if (url.includes('/src/lua/') || url.includes('/src/lua-api/'))
    return 'moonhub Lua bridge (src/lua*)';
  if (url.includes('/src/upstream/')) return 'moonhub upstream (src/upstream)';
  if (url.includes('/src/')) return 'moonhub other (src)';
  if (url.includes('node_modules/@modelcontextprotocol')) return 'MCP SDK';
  if (url.includes('node_modules/zod')) return 'zod';
  if (url.startsWith('node:internal/deps/undici')) return 'Node fetch (undici)';
  if (url.includes('node_modules/wasmoon')) return 'wasmoon glue (emscripten JS)';
  if (url.includes('node_modules/ajv')) return 'ajv';
  if (url.includes('node_modules/pino')) return 'pino';
  if (url.startsWith('node:') && /_http_|http_parser|node:http/.test(url)) return 'Node http';
  if (url.startsWith('node:') && /net|stream|socket|tcp/.test(url)) return 'Node net/streams';
  if (url.startsWith('node:')) return 'Node other';
  if (url === '') return 'V8 builtins (JSON, Map, ...) and generated code';
  return 'other';
}

/** Summarizes samples taken between `fromMs` and `toMs` after the profile started. */
export function summarizeProfile(json: string, fromMs: number, toMs: number): ProfileSummary {
  const p = JSON.parse(json) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  let t = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const ms = t / 1000;
    if (ms < fromMs || ms > toMs) continue;
    // A sample's time is the gap to the next one.
    const dt = p.timeDeltas[i + 1] ?? 0;
    selfUs.set(p.samples[i]!, (selfUs.get(p.samples[i]!) ?? 0) + dt);
  }
  const areas = new Map<string, number>();
  const fns = new Map<string, { area: string; us: number }>();
  let window = 0;
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const area = areaOf(functionName, url);
    window += us;
    areas.set(area, (areas.get(area) ?? 0) + us);
    const file = url.replace(/^.*\/(dist|node_modules)\//, '$1/');
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    const f = fns.get(key) ?? { area, us: 0 };
    f.us += us;
    fns.set(key, f);
  }
  const active = window - (areas.get('idle') ?? 0);
  const ms = (us: number) => Math.round(us / 10) / 100;
  const share = (us: number) => Math.round((us / active) * 1000) / 1000;
  return {
    windowMs: ms(window),
    activeMs: ms(active),
    areas: [...areas]
      .filter(([a]) => a !== 'idle')
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, ms: ms(us), share: share(us) })),
    top: [...fns]
      .filter(([, f]) => f.area !== 'idle')
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, 20)
      .map(([fn, f]) => ({ fn, area: f.area, ms: ms(f.us), share: share(f.us) })),
  };
}
