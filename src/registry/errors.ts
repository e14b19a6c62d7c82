/**
 * Errors that stay inside the process, each with a string code. The server maps them onto
 * JSON-RPC errors; Lua bindings turn them into Lua errors or `nil, err` returns.
 */

import type { RegistryErrorCode } from '../errors.js';

export type { RegistryErrorCode };

export class RegistryError extends Error {
  readonly code: RegistryErrorCode;
  constructor(code: RegistryErrorCode, message: string) {
    super(message);
    this.name = 'RegistryError';
    this.code = code;
  }
}

/** What kind of handler failed: the MCP method's subject. */
export type HandlerKind = 'tool' | 'prompt' | 'resource' | 'completion';

/**
 * A prompt, resource or completion handler raised (or returned something unusable). It is the
 * plugin's failure, not the hub's: the message is the handler's own, and it reaches the client
 * as a JSON-RPC error with that message (tools report theirs as `isError` results instead).
 */
export class HandlerError extends RegistryError {
  readonly owner: string;
  readonly kind: HandlerKind;
  readonly subject: string;
  constructor(owner: string, kind: HandlerKind, subject: string, cause: unknown) {
    super('handler_failed', cause instanceof Error ? cause.message : String(cause));
    this.name = 'HandlerError';
    this.owner = owner;
    this.kind = kind;
    this.subject = subject;
  }
}
