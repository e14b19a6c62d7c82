/**
 * Errors that stay inside the process, each with a string code. The server maps them onto
 * JSON-RPC errors; Lua bindings turn them into Lua errors or `nil, err` returns.
 */

export type RegistryErrorCode =
  | 'unknown_tool'
  | 'unknown_prompt'
  | 'unknown_resource'
  | 'invalid_arguments'
  | 'invalid_definition'
  | 'batch_mismatch'
  | 'not_implemented';

export class RegistryError extends Error {
  readonly code: RegistryErrorCode;
  constructor(code: RegistryErrorCode, message: string) {
    super(message);
    this.name = 'RegistryError';
    this.code = code;
  }
}
