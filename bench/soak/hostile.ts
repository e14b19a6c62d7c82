/**
 * The soak's hostile clients, one class each, every one bounded in concurrency (and the held
 * ones in count) and stopped at the end of the run. Each counts what it got back per outcome
 * ("HTTP 413 -32000", "held", "closed by hub", "timeout"...). They present the attacker's
 * token, so per-principal bounds refuse them and not the honest clients.
 */
import { connect, type Socket } from 'node:net';
import {
  failureLabel,
  labelOf,
  legacyHeaders,
  modernRequest,
  newId,
  post,
  type Tally,
  type Target,
} from './wire.js';

export interface Ctx {
  t: Target;
  tally: Tally;
  running(): boolean;
}

export interface HostileClass {
  name: string;
  what: string;
  run(ctx: Ctx): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `once` back to back on `concurrency` lanes, pausing `pauseMs` between tries. */
async function lanes(
  ctx: Ctx,
  concurrency: number,
  pauseMs: number,
  once: (lane: number, i: number) => Promise<string>,
): Promise<void> {
  const lane = async (n: number) => {
    for (let i = 0; ctx.running(); i++) {
      try {
        ctx.tally.add(await once(n, i));
      } catch (err) {
        ctx.tally.add(failureLabel(err));
      }
      if (pauseMs > 0) await sleep(pauseMs);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, n) => lane(n)));
}

async function send(
  ctx: Ctx,
  body: string | Buffer,
  headers: Record<string, string>,
  timeoutMs = 15_000,
) {
  return labelOf(await post(ctx.t.url, body, headers, timeoutMs));
}

async function legacySession(ctx: Ctx, version: string): Promise<string | undefined> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: newId(),
    method: 'initialize',
    params: {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: 'soak-x', version: '1' },
    },
  });
  const headers = { ...legacyHeaders(ctx.t), 'MCP-Protocol-Version': version };
  const a = await post(ctx.t.url, body, headers, 15_000);
  return a.headers.get('mcp-session-id') ?? undefined;
}

const HUGE = Buffer.alloc(6 * 1024 * 1024, 'a');
HUGE.write('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"');

const MALFORMED: [string, string][] = [
  ['not json', 'application/json'],
  ['{"jsonrpc":"1.0","id":1,"method":"tools/list"}', 'application/json'],
  ['{"jsonrpc":"2.0","id":{},"method":5}', 'application/json'],
  ['[]', 'application/json'],
  ['[1,2,3]', 'application/json'],
  ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}', 'application/json'],
  ['['.repeat(100_000), 'application/json'],
  ['{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 'text/plain'],
];

/** A raw socket held open for a class that does not read or does not finish its request. */
function rawSocket(url: string, localAddress?: string): Socket {
  const u = new URL(url);
  const s = connect({
    port: Number(u.port),
    host: u.hostname,
    ...(localAddress === undefined ? {} : { localAddress }),
  });
  s.on('error', () => {});
  return s;
}

export const HOSTILE: HostileClass[] = [
  {
    name: 'huge_body',
    what: '6 MiB POST bodies (limit 4 MiB)',
    run: (ctx) =>
      lanes(ctx, 1, 250, () => send(ctx, HUGE, modernRequest(ctx.t, 'tools/list').headers)),
  },
  {
    name: 'malformed',
    what: 'invalid JSON, non-JSON-RPC, bad params, deep nesting, wrong media type',
    run: (ctx) =>
      lanes(ctx, 2, 10, (_, i) => {
        const [body, type] = MALFORMED[i % MALFORMED.length]!;
        const headers = { ...modernRequest(ctx.t, 'tools/list').headers, 'Content-Type': type };
        return send(ctx, body, headers);
      }),
  },
  {
    name: 'big_batch',
    what: '2025-03-26 batches of 10,000 pings',
    run: async (ctx) => {
      const sid = await legacySession(ctx, '2025-03-26');
      const batch = JSON.stringify(
        Array.from({ length: 10_000 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'ping' })),
      );
      const headers = { ...legacyHeaders(ctx.t, sid), 'MCP-Protocol-Version': '2025-03-26' };
      await lanes(ctx, 1, 1000, () => send(ctx, batch, headers, 30_000));
    },
  },
  {
    name: 'session_flood',
    what: '2025 sessions opened and abandoned, as fast as 4 lanes go',
    run: (ctx) =>
      lanes(ctx, 4, 0, async () =>
        (await legacySession(ctx, '2025-11-25')) === undefined ? 'refused' : 'session opened',
      ),
  },
  {
    name: 'subscription_flood',
    what: 'one 2025 session subscribing to ever new 1 KiB URIs',
    run: async (ctx) => {
      const sid = await legacySession(ctx, '2025-11-25');
      const pad = 'u'.repeat(1024);
      await lanes(ctx, 2, 0, (lane, i) => {
        const uri = `soak://flood/${lane}/${i}/${pad}`;
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: newId(),
          method: 'resources/subscribe',
          params: { uri },
        });
        return send(ctx, body, legacyHeaders(ctx.t, sid));
      });
    },
  },
  {
    name: 'listen_flood',
    what: 'subscriptions/listen streams opened and held (at most 1500)',
    run: (ctx) => listenFlood(ctx, 1500),
  },
  {
    name: 'nonreader',
    what: 'execute scripts calling notice in a loop, on streams nobody reads (2 held 10 s each)',
    run: (ctx) => lanes(ctx, 2, 0, () => nonReader(ctx, 10_000)),
  },
  {
    name: 'slowloris',
    what: 'connections sending one header byte a second (at most 100 open)',
    run: (ctx) => slowloris(ctx, 100),
  },
  {
    name: 'conn_flood',
    what: 'idle connections from 127.0.0.2 that never send a byte (at most 3000 open, 500 opened a second)',
    run: (ctx) => connFlood(ctx, 3000),
  },
  {
    name: 'spin',
    what: 'plugin calls that loop forever (their limit stops them)',
    run: (ctx) =>
      lanes(ctx, 2, 0, async () => {
        const { body, headers } = modernRequest(ctx.t, 'tools/call', {
          name: 'spin.loop',
          arguments: {},
        });
        const a = await post(ctx.t.url, body, headers, 15_000);
        const r = a.messages[0]?.result as
          { isError?: boolean; content?: { text?: string }[] } | undefined;
        if (r?.isError === true) return `tool error: ${(r.content?.[0]?.text ?? '').split(':')[0]}`;
        return labelOf(a);
      }),
  },
  {
    name: 'bad_credentials',
    what: 'wrong bearer tokens, foreign Origin, unknown session ids',
    run: (ctx) =>
      lanes(ctx, 1, 20, (_, i) => {
        const { body, headers } = modernRequest(ctx.t, 'tools/list');
        if (i % 3 === 0)
          return send(ctx, body, { ...headers, Authorization: 'Bearer not-a-token' });
        if (i % 3 === 1) return send(ctx, body, { ...headers, Origin: 'http://evil.example' });
        const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
        return send(ctx, list, legacyHeaders(ctx.t, `no-such-${i}`));
      }),
  },
  {
    name: 'huge_ids',
    what: 'requests whose JSON-RPC id is a 1 MiB string',
    run: (ctx) =>
      lanes(ctx, 1, 100, () => {
        const { body, headers } = modernRequest(ctx.t, 'tools/list', {}, 'i'.repeat(1 << 20));
        return send(ctx, body, headers);
      }),
  },
];

async function listenFlood(ctx: Ctx, max: number): Promise<void> {
  const held: { ctl: AbortController; res: Response }[] = [];
  const lane = async () => {
    while (ctx.running() && held.length < max) {
      const ctl = new AbortController();
      const { body, headers } = modernRequest(ctx.t, 'subscriptions/listen', {
        notifications: { toolsListChanged: true },
      });
      try {
        const res = await fetch(ctx.t.url, { method: 'POST', headers, body, signal: ctl.signal });
        if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
          // Held: the response is kept and never read, so its connection stays open.
          held.push({ ctl, res });
          ctx.tally.add('stream held');
        } else {
          const text = await res.text();
          const code = /"code":(-?\d+)/.exec(text)?.[1];
          ctx.tally.add(`HTTP ${res.status}${code === undefined ? '' : ' ' + code}`);
          await sleep(50);
        }
      } catch (err) {
        ctx.tally.add(failureLabel(err));
      }
    }
  };
  // 16 lanes: past the 1,024 streams a transport allowed before issue 12 within seconds.
  await Promise.all(Array.from({ length: 16 }, lane));
  while (ctx.running()) await sleep(100);
  for (const h of held) h.ctl.abort();
}

const NOTICE_LOOP = 'local s = string.rep("n", 16000)\nfor i = 1, 1e9 do notice(s) end';

/** One execute run on a raw socket that never reads its answer; closed after `holdMs`. */
async function nonReader(ctx: Ctx, holdMs: number): Promise<string> {
  const { body, headers } = modernRequest(ctx.t, 'tools/call', {
    name: 'execute',
    arguments: { code: NOTICE_LOOP },
  });
  const u = new URL(ctx.t.url);
  const head = [
    `POST ${u.pathname} HTTP/1.1`,
    `Host: ${u.host}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
  const s = rawSocket(ctx.t.url);
  s.write(head.join('\r\n') + '\r\n\r\n' + body);
  s.pause();
  let closedByHub = false;
  s.once('close', () => (closedByHub = true));
  const until = Date.now() + holdMs;
  while (Date.now() < until && ctx.running() && !closedByHub) await sleep(100);
  s.destroy();
  return closedByHub ? 'closed by hub' : 'held unread';
}

async function slowloris(ctx: Ctx, max: number): Promise<void> {
  const open = new Set<Socket>();
  const u = new URL(ctx.t.url);
  const head = `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nX-Slow: `;
  while (ctx.running()) {
    if (open.size < max) {
      const s = rawSocket(ctx.t.url);
      s.write(head);
      open.add(s);
      s.once('close', () => {
        if (open.delete(s)) ctx.tally.add('closed by hub');
      });
      ctx.tally.add('opened');
    }
    for (const s of open) s.write('a');
    await sleep(open.size < max ? 20 : 1000);
  }
  for (const s of open) {
    open.delete(s);
    s.destroy();
  }
}

/**
 * Holds up to `max` connections that send nothing, from an address of their own. Opening is
 * paced: each connection costs the hub's thread ~150 us even when refused at once, so a client
 * churning connections as fast as it can is for a firewall or load balancer in front to bound
 * (docs/security.md); this class is about what held connections take.
 */
async function connFlood(ctx: Ctx, max: number): Promise<void> {
  const open = new Set<Socket>();
  while (ctx.running()) {
    for (let i = 0; i < 50 && open.size < max; i++) {
      const s = rawSocket(ctx.t.url, '127.0.0.2');
      open.add(s);
      s.once('close', () => {
        if (open.delete(s)) ctx.tally.add('closed by hub');
      });
      ctx.tally.add('opened');
    }
    await sleep(100);
  }
  for (const s of open) {
    open.delete(s);
    s.destroy();
  }
}
