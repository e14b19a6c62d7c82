/**
 * The audit log: one JSON line per MCP request when it ends (time, principal, agent, target,
 * method, name, argument size and SHA-256, outcome, duration, upstream), to a file (appended,
 * owner-only) or stderr. Argument values are left out unless `include_arguments` asks for them.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import type { CallEnd, CallObserver, CallStart } from './call-observer.js';

export interface AuditOptions {
  /** A file to append to, or "stderr". */
  to: string;
  includeArguments?: boolean;
  /** Who a principal is (agent, target, session). */
  identityOf?: (principal: string) => { session_uuid?: string; agent?: string; target?: string };
  /** The upstream a tool is proxied from (redacted address), if it is. */
  upstreamOf?: (tool: string) => string | undefined;
}

export interface AuditRecord {
  type: 'audit';
  time: string;
  transport: string;
  principal: string | null;
  agent: string | null;
  target: string | null;
  session: string | null;
  method: string;
  name: string | null;
  argument_bytes: number;
  argument_sha256: string | null;
  arguments?: unknown;
  /** Set when the arguments could not be serialised (then bytes 0, no hash, no values). */
  argument_error?: string;
  outcome: string;
  error_code?: number;
  duration_ms: number;
  upstream?: string;
}

const ARG_FIELD: Record<string, string> = {
  'tools/call': 'arguments',
  'prompts/get': 'arguments',
  'completion/complete': 'argument',
};

export class AuditLog {
  private readonly fd: number;
  private readonly ownFd: boolean;

  constructor(private readonly opts: AuditOptions) {
    this.ownFd = opts.to !== 'stderr';
    this.fd = this.ownFd ? openSync(opts.to, 'a', 0o600) : 2;
  }

  readonly observer: CallObserver = {
    start: (call: CallStart) => (end: CallEnd) => this.write(call, end),
  };

  private write(call: CallStart, end: CallEnd): void {
    const field = ARG_FIELD[call.method];
    const args = field === undefined ? undefined : call.params[field];
    // A client's arguments may nest too deep to serialise (JSON.stringify throws a RangeError
    // from about 5,000 levels): the call still gets its line, marked, without them.
    let text = '';
    let unserializable = false;
    try {
      text = args === undefined ? '' : JSON.stringify(args);
    } catch {
      unserializable = true;
    }
    const who = call.principal === undefined ? {} : (this.opts.identityOf?.(call.principal) ?? {});
    const rec: AuditRecord = {
      type: 'audit',
      time: new Date(call.startedAt).toISOString(),
      transport: call.transport,
      principal: call.principal ?? null,
      agent: who.agent ?? null,
      target: who.target ?? null,
      session: who.session_uuid ?? call.sessionId ?? null,
      method: call.method,
      name: call.name ?? null,
      argument_bytes: Buffer.byteLength(text),
      argument_sha256: text === '' ? null : createHash('sha256').update(text).digest('hex'),
      outcome: end.outcome,
      duration_ms: Math.round(end.durationMs * 1000) / 1000,
    };
    if (unserializable) rec.argument_error = 'not serialisable (nested too deep)';
    else if (this.opts.includeArguments && args !== undefined) rec.arguments = args;
    if (end.errorCode !== undefined) rec.error_code = end.errorCode;
    if (call.method === 'tools/call' && call.name !== undefined) {
      const upstream = this.opts.upstreamOf?.(call.name);
      if (upstream !== undefined) rec.upstream = upstream;
    }
    try {
      writeSync(this.fd, JSON.stringify(rec) + '\n');
    } catch {
      // A full disk must not fail the call; the operator sees the gap in the file.
    }
  }

  close(): void {
    if (this.ownFd) closeSync(this.fd);
  }
}
