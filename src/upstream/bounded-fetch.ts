/**
 * The fetch the SDK client's HTTP transports use for an upstream (lists, prompts, resources,
 * the GET stream, every call that does not take the direct path), with the answer bound the
 * direct path has (`plugin_limits.upstream_answer_bytes`): a JSON body, or one event of an event
 * stream, larger than the bound ends that body with an error naming the key, before it is all
 * held in memory. Without it a hostile upstream's 1 GB `tools/list` was read whole.
 */
import type { FetchLike } from '@modelcontextprotocol/client';

const LF = 0x0a;

/** `inner` (or the global fetch) with every answer's body cut off past `maxBytes`. */
export function boundedFetch(maxBytes: number, inner?: FetchLike): FetchLike {
  const base: FetchLike = inner ?? ((url, init) => fetch(url, init));
  return async (url, init) => {
    const res = await base(url, init);
    if (res.body === null) return res;
    const stream = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    const body = res.body.pipeThrough(limiter(maxBytes, stream));
    return new Response(body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}

/**
 * Bytes of upstream bodies passed on in one event-loop turn, over every upstream, before the
 * next slice waits for the next turn. What follows a slice (the SSE parse, JSON.parse, the SDK's
 * schema check, the hub's handling) runs in microtasks that never yield: an upstream writing
 * notifications as fast as its socket takes them kept the hub's thread 300-600 ms at a time
 * (its event-loop delay p99, test upstream-list-changed-flood) before its flood was cut off.
 * 16 KiB is ~200 small notifications; a 1 MB answer takes ~64 turns, each a few µs when idle.
 */
export const TURN_BUDGET_BYTES = 16 * 1024;

let turnBytes = 0;
let turnResetQueued = false;
const resetTurn = (): void => {
  turnBytes = 0;
  turnResetQueued = false;
};
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Counts `n` bytes in this turn's budget; true when the budget was already spent. */
function overBudget(n: number): boolean {
  if (!turnResetQueued) {
    turnResetQueued = true;
    setImmediate(resetTurn);
  }
  const over = turnBytes >= TURN_BUDGET_BYTES;
  turnBytes += n;
  return over;
}

/**
 * Counts the bytes of the body (of the current event, for an event stream: an empty line ends
 * an event, so two line feeds in a row reset the count) and errors past `maxBytes`. Passes the
 * body on in slices of at most TURN_BUDGET_BYTES, each in a turn with budget left.
 */
function limiter(maxBytes: number, stream: boolean): TransformStream<Uint8Array, Uint8Array> {
  let held = 0;
  let lastWasLf = false;
  const count = (chunk: Uint8Array): void => {
    if (!stream) held += chunk.byteLength;
    else
      for (let i = 0; i < chunk.byteLength; i++) {
        const lf = chunk[i] === LF;
        held = lf && lastWasLf ? 0 : held + 1;
        lastWasLf = lf || (chunk[i] === 0x0d && lastWasLf);
      }
  };
  return new TransformStream({
    async transform(chunk, controller) {
      for (let at = 0; at < chunk.byteLength; at += TURN_BUDGET_BYTES) {
        const slice =
          at === 0 && chunk.byteLength <= TURN_BUDGET_BYTES
            ? chunk
            : chunk.subarray(at, at + TURN_BUDGET_BYTES);
        if (overBudget(slice.byteLength)) {
          await nextTurn();
          overBudget(slice.byteLength);
        }
        count(slice);
        if (held > maxBytes)
          return controller.error(
            new Error(
              `the upstream answer is larger than ${maxBytes} bytes (plugin_limits.upstream_answer_bytes)`,
            ),
          );
        controller.enqueue(slice);
      }
    },
  });
}
