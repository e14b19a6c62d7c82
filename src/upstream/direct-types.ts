/**
 * The vocabulary shared by the direct path's two halves: the session it speaks on and what a
 * call needs (direct-http.ts, one per connected session), and the call in flight that reads the
 * answer (direct-call.ts). `CallOwner` is what a call may use of its session, so the call's
 * module does not depend on the session's.
 */
import type { ClientRequest, OutgoingHttpHeaders } from 'node:http';
import type { SlotTable } from '../slot-table.js';
import type { AbortWatch } from '../registry/types.js';
import type { RawHttpPool } from './raw-http.js';

/** Bytes of one answer (a JSON body, one event of a stream): plugin_limits.upstream_answer_bytes. */
export const DEFAULT_ANSWER_BYTES = 16 * 1024 * 1024;

/** Returned when a 2026-07-28 upstream wants input first: run the call through the SDK. */
export const INPUT_REQUIRED: unique symbol = Symbol('input_required');

/** What the SDK client negotiated, which the direct path speaks on. */
export interface DirectSession {
  url: URL;
  era: 'modern' | 'legacy';
  protocolVersion: string;
  sessionId: string | undefined;
  /** The connection's own headers (custom ones, Authorization), as the SDK sends them. */
  headers: Record<string, string>;
  clientInfo: unknown;
  capabilities: Record<string, unknown>;
  /** Bytes of one answer (JSON body, or one event of a stream); past it the call fails. */
  answerBytes: number;
  /** Hands a message of the upstream that is not this request's to the SDK client. */
  deliver(message: unknown): void;
  /** 2025 eras: tells the upstream a request was cancelled (notifications/cancelled). */
  cancelled(id: string, reason: string): void;
  /** The upstream went away under a call (refused, reset): the connection is lost. */
  networkFailed(err: unknown): void;
}

/** Who hears of this request's progress (a CallPeer fits). */
export interface ProgressSink {
  progress(progress: number, total?: number, message?: string): unknown;
}

/**
 * Who a call works for: read lazily, so a call whose caller neither cancels nor hears progress
 * makes no AbortSignal and no peer (a CallContext fits: `signal` and `peer` are getters there).
 */
export interface CallerSource {
  /** The caller's abort, heard without an AbortSignal; preferred over `signal`. */
  readonly abortWatch?: AbortWatch;
  readonly signal?: AbortSignal;
  /** Read only when the upstream reports progress. */
  readonly peer?: ProgressSink;
}

export interface DirectOptions {
  caller: CallerSource;
  /** Longest silence (reset by progress) and longest total time, ms. */
  idleMs: number;
  totalMs: number;
}

/** What a call in flight uses of its session's direct path (DirectHttp implements it). */
export interface CallOwner {
  readonly session: DirectSession;
  /** Calls in flight, failed together when the connection is lost. */
  readonly live: SlotTable<{ abort(reason: Error): void }>;
  /** Plain-http upstreams: the lean client's sockets; else node:http for all. */
  readonly pool: RawHttpPool | undefined;
  /** The lean client's request head for a header list (undefined: node:http must send it). */
  headOf(list: string[]): string | undefined;
  /** Opens one node:http(s) request to the upstream; the caller wires its events. */
  open(method: 'POST' | 'GET', headers: OutgoingHttpHeaders | string[]): ClientRequest;
}
