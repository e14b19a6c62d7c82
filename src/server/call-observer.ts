/**
 * The per-call hook `moonhub dev` prints its human log line from (issue 15): told once per
 * tools/call, prompts/get and resources/read when its answer is ready, with who asked, what,
 * how long it took, the answer's size and its error. Only wrapped in when a hook is given, so
 * the hot path of a plain `serve` is untouched.
 */
import type { JsonRpcRequest } from './jsonrpc.js';

export interface CallEvent {
  method: string;
  /** The tool or prompt name, or the resource URI. */
  name: string;
  /** `session:UUID`, `oauth:SUB`, or undefined for a local (auth none / stdio) caller. */
  principal: string | undefined;
  ms: number;
  /** Bytes of the JSON-RPC answer. */
  bytes: number;
  /** A JSON-RPC error's message, or the text of a tool result with isError. */
  error: string | undefined;
}

const OBSERVED = new Set(['tools/call', 'prompts/get', 'resources/read']);

function errorOf(answer: string): string | undefined {
  try {
    const msg = JSON.parse(answer) as {
      error?: { message?: string };
      result?: { isError?: boolean; content?: { type?: string; text?: string }[] };
    };
    if (msg.error) return msg.error.message ?? 'error';
    if (msg.result?.isError === true)
      return msg.result.content?.find((c) => c.type === 'text')?.text ?? 'tool error';
  } catch {
    // Not JSON: nothing to say about it.
  }
  return undefined;
}

export function observeCalls<S extends { principal?: string | undefined }, A>(
  answer: (msg: JsonRpcRequest, scope: S, abort?: A) => Promise<string>,
  onCall: (e: CallEvent) => void,
  principalOf: (scope: S) => string | undefined,
): (msg: JsonRpcRequest, scope: S, abort?: A) => Promise<string> {
  return async (msg, scope, abort) => {
    if (!OBSERVED.has(msg.method)) return answer(msg, scope, abort);
    const started = performance.now();
    const out = await answer(msg, scope, abort);
    const p = msg.params ?? {};
    const name = typeof p.name === 'string' ? p.name : typeof p.uri === 'string' ? p.uri : '?';
    try {
      onCall({
        method: msg.method,
        name,
        principal: principalOf(scope),
        ms: performance.now() - started,
        bytes: Buffer.byteLength(out),
        error: errorOf(out),
      });
    } catch {
      // An observer's bug must not cost the client its answer.
    }
    return out;
  };
}
