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
 * Counts the bytes of the body (of the current event, for an event stream: an empty line ends
 * an event, so two line feeds in a row reset the count) and errors past `maxBytes`.
 */
function limiter(maxBytes: number, stream: boolean): TransformStream<Uint8Array, Uint8Array> {
  let held = 0;
  let lastWasLf = false;
  return new TransformStream({
    transform(chunk, controller) {
      if (!stream) held += chunk.byteLength;
      else
        for (let i = 0; i < chunk.byteLength; i++) {
          const lf = chunk[i] === LF;
          held = lf && lastWasLf ? 0 : held + 1;
          lastWasLf = lf || (chunk[i] === 0x0d && lastWasLf);
        }
      if (held > maxBytes)
        return controller.error(
          new Error(
            `the upstream answer is larger than ${maxBytes} bytes (plugin_limits.upstream_answer_bytes)`,
          ),
        );
      controller.enqueue(chunk);
    },
  });
}
