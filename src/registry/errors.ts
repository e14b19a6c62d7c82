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
