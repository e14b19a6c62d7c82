/**
 * chilkat.Mcp's state and methods (LUA_API §4, the chilkat seed): a synchronous-looking MCP
 * client over Streamable HTTP on the upstream layer. Each method runs as a promise the calling
 * coroutine waits on; failures become `nil, err` with `last_error_text` saying what happened, and
 * the event handlers (`abort_check`, `percent_done`, `progress_info`) run in the Lua state while
 * the method waits: a true return aborts the method, an error raised there is raised again from
 * the method call.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Client, JSONRPCMessage } from '@modelcontextprotocol/client';
import type { LuaState } from '../lua/state.js';
import type { UpstreamConnection } from '../upstream/connection.js';
import type * as ConnectionModule from '../upstream/connection.js';
import { createNodeFetch, hasNetSettings, type NetSettings } from '../upstream/node-fetch.js';

/**
 * The upstream layer and the SDK client, loaded on the first Connect: most plugins never make
 * an Mcp client, and every plugin worker would otherwise load ~150 modules (the SDK and zod) it
 * does not use (docs/performance.md, "Start-up").
 */
let clientLayer: Promise<[typeof ConnectionModule, readonly string[]]> | undefined;
function loadClientLayer() {
  clientLayer ??= Promise.all([
    import('../upstream/connection.js'),
    import('@modelcontextprotocol/client').then((sdk) => sdk.SUPPORTED_PROTOCOL_VERSIONS),
  ]);
  return clientLayer;
}

export const CHILKAT_VERSION = '11.7.0';
export const MODERN_VERSION = '2026-07-28';

/** What a method hands back to the Lua wrapper. */
export type Outcome =
  | { kind: 'ok'; values: unknown[] }
  | { kind: 'fail'; err: string }
  | { kind: 'raise'; message: string };

export interface EventRefs {
  abort_check?: number;
  percent_done?: number;
  progress_info?: number;
}

export class ChilkatMcp {
  authToken = '';
  connectTimeoutMs = 30_000;
  idleTimeoutMs = 180_000;
  heartbeatMs = 0;
  protocolVersion = '2025-06-18';
  verboseLogging = false;
  debugLogFilePath = '';
  lastMethodSuccess = true;
  lastErrorText = '';
  serverName = '';
  serverVersion = '';
  serverInstructions = '';
  sessionId = '';
  net: NetSettings = {};
  events: EventRefs = {};
  private conn: UpstreamConnection | undefined;
  private lastEnvelope: JSONRPCMessage | undefined;
  private readonly state: LuaState;
  /** Resolves a debug log VFS path to a file on disk, or explains why it cannot be written. */
  private readonly debugFile: (path: string) => string | { error: string };

  constructor(state: LuaState, debugFile: (path: string) => string | { error: string }) {
    this.state = state;
    this.debugFile = debugFile;
  }

  get connected(): boolean {
    return this.conn?.state === 'connected';
  }

  get lastJson(): JSONRPCMessage | undefined {
    return this.lastEnvelope;
  }

  /** Runs a method with its events, timing and error bookkeeping. */
  private async run(
    method: string,
    body: (signal: AbortSignal, onProgress: (p: ProgressUpdate) => void) => Promise<unknown[]>,
    detail = '',
  ): Promise<Outcome> {
    const ac = new AbortController();
    let raised: string | undefined;
    let abortedBy: string | undefined;
    let done = false;
    let chain: Promise<void> = Promise.resolve();
    const fire = (event: keyof EventRefs, args: unknown[]): void => {
      const ref = this.events[event];
      if (ref === undefined) return;
      chain = chain.then(async () => {
        if (done || ac.signal.aborted) return;
        try {
          const [v] = await this.state.call(ref, args);
          if (v === true && event !== 'progress_info') {
            abortedBy = event;
            ac.abort();
          }
        } catch (err) {
          raised = (err as Error).message;
          ac.abort();
        }
      });
    };
    let lastPct = 0;
    const onProgress = (p: ProgressUpdate) => {
      if (p.total !== undefined && p.total > 0) {
        const pct = Math.max(1, Math.min(100, Math.floor((p.progress / p.total) * 100)));
        if (pct > lastPct) {
          lastPct = pct;
          fire('percent_done', [pct]);
        }
      }
      fire('progress_info', [
        'Progress',
        p.total !== undefined ? `${p.progress}/${p.total}` : `${p.progress}`,
      ]);
      if (p.message) fire('progress_info', ['ProgressMessage', p.message]);
    };
    const heartbeat =
      this.heartbeatMs > 0 && this.events.abort_check !== undefined
        ? setInterval(() => fire('abort_check', []), this.heartbeatMs)
        : undefined;
    let outcome: Outcome;
    try {
      const values = await Promise.race([
        body(ac.signal, onProgress),
        new Promise<never>((_, reject) =>
          ac.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        ),
      ]);
      if (lastPct > 0 && lastPct < 100) fire('percent_done', [100]);
      await chain;
      outcome = raised
        ? { kind: 'raise', message: raised }
        : abortedBy
          ? { kind: 'fail', err: `aborted by the ${abortedBy} event handler` }
          : { kind: 'ok', values };
    } catch (err) {
      await chain;
      if (raised) outcome = { kind: 'raise', message: raised };
      else if (abortedBy)
        outcome = { kind: 'fail', err: `aborted by the ${abortedBy} event handler` };
      else outcome = { kind: 'fail', err: (err as Error).message };
    } finally {
      done = true;
      if (heartbeat) clearInterval(heartbeat);
    }
    return this.record(method, detail, outcome);
  }

  /** Sets LastMethodSuccess / LastErrorText from a method's outcome and writes the debug log. */
  private record(method: string, detail: string, outcome: Outcome): Outcome {
    this.lastMethodSuccess = outcome.kind === 'ok';
    this.lastErrorText =
      outcome.kind === 'ok'
        ? `${method}: Success${this.verboseLogging && detail ? ` (${detail})` : ''}`
        : outcome.kind === 'fail'
          ? `${method}: ${outcome.err}`
          : `${method}: an event handler raised an error: ${outcome.message}`;
    if (outcome.kind === 'fail') outcome = { kind: 'fail', err: this.lastErrorText };
    this.writeDebugLog();
    return outcome;
  }

  private writeDebugLog(): void {
    if (!this.debugLogFilePath) return;
    const file = this.debugFile(this.debugLogFilePath);
    if (typeof file !== 'string') {
      this.lastErrorText += `\n(debug log not written: ${file.error})`;
      return;
    }
    try {
      mkdirSync(dirname(file), { recursive: true });
      appendFileSync(file, `${new Date().toISOString()} ${this.lastErrorText}\n`);
    } catch (err) {
      this.lastErrorText += `\n(debug log not written: ${(err as Error).message})`;
    }
  }

  private requireConnection(): UpstreamConnection {
    if (!this.conn || this.conn.state !== 'connected')
      throw new Error('not connected: call connect first');
    return this.conn;
  }

  connect(url: string): Promise<Outcome> {
    return this.run(
      'Connect',
      async (signal, onProgress) => {
        if (!/^https?:\/\//i.test(url))
          throw new Error(
            `the URL must begin with http:// or https:// (got '${url}'); the stdio transport is not supported`,
          );
        await this.conn?.close();
        this.conn = undefined;
        const [{ UpstreamConnection }, SUPPORTED_PROTOCOL_VERSIONS] = await loadClientLayer();
        const modern = this.protocolVersion === MODERN_VERSION;
        const legacy = SUPPORTED_PROTOCOL_VERSIONS.filter(
          (v) => v !== this.protocolVersion && v < MODERN_VERSION,
        );
        const conn = new UpstreamConnection({
          url,
          token: this.authToken || undefined,
          connectTimeoutMs: this.connectTimeoutMs || 2 ** 31 - 1,
          idleTimeoutMs: this.idleTimeoutMs || 2 ** 31 - 1,
          callTimeoutMs: 2 ** 31 - 1,
          versionMode: modern ? { pin: MODERN_VERSION } : 'legacy',
          protocolVersions: modern ? undefined : [this.protocolVersion, ...legacy],
          autoReconnect: false,
          legacySseFallback: false,
          fetch: hasNetSettings(this.net) ? createNodeFetch(this.net) : undefined,
          clientInfo: { name: 'chilkat.Mcp (moonhub)', version: CHILKAT_VERSION },
          onIncoming: (m) => {
            if ('id' in m && ('result' in m || 'error' in m)) this.lastEnvelope = m;
          },
        });
        onProgress({ progress: 0 });
        const client = await raceAbort(conn.connect(), signal);
        this.conn = conn;
        this.protocolVersion = client.getNegotiatedProtocolVersion() ?? this.protocolVersion;
        const info = client.getServerVersion();
        this.serverName = info?.name ?? '';
        this.serverVersion = info?.version ?? '';
        this.serverInstructions = client.getInstructions() ?? '';
        this.sessionId = (client.transport as { sessionId?: string } | undefined)?.sessionId ?? '';
        return [true];
      },
      `url ${url}`,
    );
  }

  /** A request whose result is loaded into a JsonObject by the caller. */
  request(
    method: string,
    run: (client: Client, options: Record<string, unknown>) => Promise<unknown>,
  ): Promise<Outcome> {
    return this.run(method, async (signal, onProgress) => {
      const conn = this.requireConnection();
      try {
        const result = await conn.request(run, { signal, onProgress });
        return [result];
      } catch (err) {
        const [{ describe }] = await loadClientLayer();
        throw describe(err, conn.url);
      }
    });
  }

  close(): Promise<Outcome> {
    return this.run('Close', async () => {
      const conn = this.conn;
      this.conn = undefined;
      this.sessionId = '';
      // A 405 to the DELETE is not an error: the SDK transport already treats it so.
      await conn?.close();
      return [true];
    });
  }

  /** Releases the connection without waiting (dispose, garbage collection). */
  release(): void {
    void this.conn?.close();
    this.conn = undefined;
  }
}

interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return Promise.race([
    p,
    new Promise<never>((_, reject) =>
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
    ),
  ]);
}
