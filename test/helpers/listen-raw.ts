/**
 * A raw 2026-07-28 `subscriptions/listen` stream over HTTP (fetch, no SDK), for tests that read
 * its frames: what it has received so far, a read until a pattern, and its end.
 */

export interface ListenStream {
  readonly res: Response;
  /** Everything the stream carried so far. */
  text(): string;
  /** Reads until `re` matches what arrived; throws if the stream ends first. */
  readUntil(re: RegExp): Promise<void>;
  /** Reads one chunk (at least the acknowledgement's start). */
  readOnce(): Promise<void>;
  /** Aborts the request and cancels the reader. */
  close(): Promise<void>;
}

const DEFAULT_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** Opens a listen stream asking for `notifications`; `meta` replaces the default envelope. */
export async function openListen(
  url: string,
  id: string,
  notifications: Record<string, unknown>,
  opts: { meta?: Record<string, unknown>; headers?: Record<string, string> } = {},
): Promise<ListenStream> {
  const ctl = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    signal: ctl.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      ...opts.headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: { _meta: opts.meta ?? DEFAULT_META, notifications },
    }),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const readOnce = async (): Promise<boolean> => {
    const { value, done } = await reader.read();
    if (!done) text += decoder.decode(value, { stream: true });
    return done;
  };
  return {
    res,
    text: () => text,
    async readUntil(re) {
      while (!re.test(text)) if (await readOnce()) throw new Error('the stream ended early');
    },
    async readOnce() {
      await readOnce();
    },
    async close() {
      ctl.abort();
      await reader.cancel().catch(() => {});
    },
  };
}
