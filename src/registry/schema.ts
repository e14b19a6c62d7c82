/**
 * Input validation for tool arguments. Schemas are compiled once, at registration, with the
 * JSON Schema dialect they declare (2020-12 unless `$schema` names draft-07), so a call pays only
 * for running the compiled validator.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import AjvDraft7 from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { RegistryError } from './errors.js';

const options = { strict: false, allErrors: false, validateFormats: false } as const;
let ajv2020: Ajv2020 | undefined;
let ajv7: InstanceType<typeof AjvDraft7.default> | undefined;

export type ArgumentValidator = (args: unknown) => string | undefined;

/** Compiles `schema`; throws `invalid_definition` naming what is wrong with it. */
export function compileValidator(schema: Record<string, unknown>, what: string): ArgumentValidator {
  let validate: ValidateFunction;
  try {
    const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
    if (
      dialect.includes('draft-07') ||
      dialect.includes('draft-06') ||
      dialect.includes('draft-04')
    ) {
      ajv7 ??= new AjvDraft7.default(options);
      validate = ajv7.compile(stripId(schema));
    } else {
      ajv2020 ??= new Ajv2020(options);
      validate = ajv2020.compile(stripId(schema));
    }
  } catch (err) {
    throw new RegistryError(
      'invalid_definition',
      `${what}: input_schema is not a valid JSON Schema: ${(err as Error).message}`,
    );
  }
  return (args) => (validate(args) ? undefined : describe(validate.errors ?? []));
}

// Two tools may share an `$id`; ajv would refuse the second compile, so ids are not registered.
function stripId(schema: Record<string, unknown>): Record<string, unknown> {
  if (!('$id' in schema)) return schema;
  const copy = { ...schema };
  delete copy.$id;
  return copy;
}

function describe(errors: ErrorObject[]): string {
  const first = errors[0];
  if (!first) return 'arguments do not match the input schema';
  const path = first.instancePath ? first.instancePath.slice(1).replace(/\//g, '.') : '';
  if (first.keyword === 'required') {
    const missing = (first.params as { missingProperty?: string }).missingProperty ?? '?';
    return `missing required argument '${path ? `${path}.` : ''}${missing}'`;
  }
  if (first.keyword === 'additionalProperties') {
    const extra = (first.params as { additionalProperty?: string }).additionalProperty ?? '?';
    return `unexpected argument '${path ? `${path}.` : ''}${extra}'`;
  }
  return `argument '${path || '(root)'}' ${first.message ?? 'is invalid'}`;
}
