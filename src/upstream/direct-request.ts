/**
 * The requests a direct call (direct-call.ts) sends: its POST's head for the lean client or its
 * header list for node:http, both from the session's headers (direct-http.ts builds them once),
 * and the headers of the GET that resumes an event stream after its last event id.
 */
import type { OutgoingHttpHeaders } from 'node:http';

/**
 * The end of the lean client's POST head, after the session's head: the body's length (its UTF-8
 * bytes) and the trace header.
 */
export function rawPostTail(bodyBytes: number, trace: string[] | undefined): string {
  return (
    `content-length: ${bodyBytes}\r\n` +
    (trace === undefined ? '' : `traceparent: ${trace[1]}\r\n`) +
    '\r\n'
  );
}

/** The POST's headers as node:http takes them (`base` has no Content-Length). */
export function postHeaders(base: string[], body: string, trace: string[] | undefined): string[] {
  const length = String(Buffer.byteLength(body));
  return base.concat('content-length', length, ...(trace ?? []));
}

/** The GET resuming an event stream: the POST's headers, bodiless, asking for the stream. */
export function resumeHeaders(
  post: string[],
  lastEventId: string | undefined,
): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (let i = 0; i < post.length; i += 2) headers[post[i]!] = post[i + 1];
  delete headers['content-type'];
  delete headers['content-length'];
  headers.accept = 'text/event-stream';
  headers['last-event-id'] = lastEventId;
  return headers;
}
