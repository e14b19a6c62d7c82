/** A failure talking to an upstream, with the HTTP status when there was one. */
export class UpstreamError extends Error {
  readonly status: number | undefined;
  readonly code: number | string | undefined;
  constructor(message: string, status?: number, code?: number | string) {
    super(message);
    this.name = 'UpstreamError';
    this.status = status;
    this.code = code;
  }
}
