/**
 * Reading a direct call's answer once it is whole (direct-call.ts feeds it): a JSON body, the
 * JSON-RPC answer found in an event stream, or a POST refused with an HTTP status. Each reader
 * returns the call's result or a `Failed` holding the error the call is rejected with, as the SDK
 * client would have reported it.
 */
import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { INPUT_REQUIRED, type DirectSession } from './direct-types.js';
import { invalid, shapeProblem, type DirectMethod } from './direct-wire.js';
import { UPSTREAM_RAW } from './raw-result.js';

type Era = DirectSession['era'];

/** An answer that fails its call (a class, so no parsed result can be taken for one). */
export class Failed {
  constructor(readonly error: unknown) {}
}

export type Outcome = Record<string, unknown> | typeof INPUT_REQUIRED | Failed;

/**
 * The answer as the hub and the SDK send it: `{"jsonrpc":"2.0","id":ID,"result":R}` (or with
 * `result` first). Then only R is parsed, and its text rides along with the result so the
 * proxy can pass it on without serialising it again (upstream/raw-result.ts).
 */
function rawResult(text: string, id: string): string | undefined {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) <= 32) end--;
  if (text.charCodeAt(end - 1) !== 125) return undefined;
  // Ids are `moonhub-N`: nothing in them needs escaping.
  const head = '{"jsonrpc":"2.0","id":"' + id + '","result":';
  if (end - 1 > head.length && text.startsWith(head)) return text.slice(head.length, end - 1);
  const tail = ',"jsonrpc":"2.0","id":"' + id + '"}';
  if (
    end - tail.length > 10 &&
    text.startsWith('{"result":') &&
    text.startsWith(tail, end - tail.length)
  )
    return text.slice(10, end - tail.length);
  return undefined;
}

/** A 200 `application/json` body answering request `id`. */
export function jsonOutcome(text: string, id: string, method: DirectMethod, era: Era): Outcome {
  const raw = rawResult(text, id);
  if (raw !== undefined) {
    let result: unknown;
    try {
      result = JSON.parse(raw);
    } catch {
      result = undefined; // Not one value (more members follow): read the whole message below.
    }
    if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
      Object.defineProperty(result, UPSTREAM_RAW, { value: raw });
      return resultOutcome(result as Record<string, unknown>, method, era);
    }
  }
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch (err) {
    return new Failed(err);
  }
  const m = msg as { id?: unknown };
  if (Array.isArray(msg) || typeof msg !== 'object' || msg === null || m.id !== id) {
    return new Failed(
      new SdkError(
        SdkErrorCode.InvalidResult,
        `Invalid response to ${method}: not the answer to this request`,
      ),
    );
  }
  return answerOutcome(msg as Record<string, unknown>, method, era);
}

/** The error a POST answered with another status than 200 JSON or event stream stands for. */
export function httpError(
  status: number,
  statusText: string,
  type: string,
  text: string,
  id: string,
  era: Era,
): unknown {
  // 2026-07-28: a 400 carrying this request's JSON-RPC error is that error (as the SDK reads it).
  if (status === 400 && type === 'application/json' && era === 'modern') {
    try {
      const m = JSON.parse(text) as Record<string, unknown>;
      if (m.id === id && m.error !== undefined) return answerError(m.error);
    } catch {
      // Not JSON: the status is the error.
    }
  }
  if (status === 202) text = `Unexpected content type: ${type}`;
  return new SdkHttpError(
    SdkErrorCode.ClientHttpNotImplemented,
    `Error POSTing to endpoint: ${text || statusText}`,
    { status, statusText, text },
  );
}

/**
 * The error an upstream answered with. The upstream is untrusted: its `error` may be any JSON
 * (null, a string, a list), and reading members off null threw out of the response's listener,
 * which ended the hub's process. Only an object's `code`, `message` and `data` are read.
 */
function answerError(error: unknown): ProtocolError {
  if (typeof error !== 'object' || error === null || Array.isArray(error))
    return ProtocolError.fromError(
      -32603,
      `the upstream answered with an error that is not an object: ${String(JSON.stringify(error)).slice(0, 100)}`,
    );
  const e = error as { code?: unknown; message?: unknown; data?: unknown };
  return ProtocolError.fromError(
    typeof e.code === 'number' ? e.code : -32603,
    String(e.message ?? 'error'),
    e.data,
  );
}

/** A JSON-RPC answer (`result` or `error`) to this request. */
export function answerOutcome(
  msg: Record<string, unknown>,
  method: DirectMethod,
  era: Era,
): Outcome {
  if (msg.error !== undefined) return new Failed(answerError(msg.error));
  const result = msg.result as Record<string, unknown> | undefined;
  if (typeof result !== 'object' || result === null || Array.isArray(result))
    return new Failed(invalid(method, 'not an object'));
  return resultOutcome(result, method, era);
}

function resultOutcome(result: Record<string, unknown>, method: DirectMethod, era: Era): Outcome {
  if (era === 'modern') {
    const kind = result.resultType;
    if (kind === 'input_required') return INPUT_REQUIRED;
    if (kind !== 'complete')
      return new Failed(
        invalid(
          method,
          kind === undefined ? 'missing required resultType' : `result type ${String(kind)}`,
        ),
      );
  }
  const problem = shapeProblem(method, result);
  if (problem !== undefined) return new Failed(invalid(method, problem));
  return result;
}
