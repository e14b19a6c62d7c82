/**
 * Reading the hub's data files (the config, agent manifests): JSON or YAML by extension, checked
 * against a published JSON Schema in schemas/, with errors that name the file and the key.
 */
import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';

/** schemas/ at the repository root (this file runs from dist/src/config/). */
const SCHEMAS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../..', 'schemas');

const compiled = new Map<string, ValidateFunction>();

function validator(schemaFile: string): ValidateFunction {
  let v = compiled.get(schemaFile);
  if (v === undefined) {
    const schema = JSON.parse(readFileSync(resolve(SCHEMAS_DIR, schemaFile), 'utf8')) as object;
    v = new Ajv2020({ allErrors: false, strict: true }).compile(schema);
    compiled.set(schemaFile, v);
  }
  return v;
}

/** `a.b.0`-style path of the key an error is about, or `(top level)`. */
function keyOf(e: ErrorObject): string {
  const at = e.instancePath.slice(1).replace(/\//g, '.');
  const params = e.params as { additionalProperty?: string; missingProperty?: string };
  const child = params.additionalProperty ?? params.missingProperty;
  if (child !== undefined) return at ? `${at}.${child}` : child;
  // A key that breaks `propertyNames`: ajv names it on the error itself.
  const name = e.propertyName ?? (e.params as { propertyName?: string }).propertyName;
  if (name !== undefined) return at ? `${at}.${name}` : name;
  return at || '(top level)';
}

const NAME_RULE =
  'letters, digits and _ . : -, starting with a letter or digit, at most 64 characters';

function reasonOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'additionalProperties':
      return 'is not a known setting';
    case 'required':
      return 'is required';
    case 'enum':
      return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues
        .map((v) => JSON.stringify(v))
        .join(', ')}`;
    case 'const':
      // The one constant in the schema: `execute: false`.
      return 'must be false or a table of settings';
    case 'oneOf':
      // The one oneOf in the schema: an upstream is a stdio command or an HTTP url.
      return 'needs either command (a stdio server) or url (an HTTP server), not both';
    case 'propertyNames':
      return `is not a valid name (${NAME_RULE})`;
    case 'pattern': {
      const pattern = (e.params as { pattern: string }).pattern;
      if (pattern.startsWith('^https?')) return 'must be an http:// or https:// URL';
      if (pattern.startsWith('^[A-Za-z0-9]')) return `is not a valid name (${NAME_RULE})`;
      return 'must not contain spaces, quotes or backslashes';
    }
    default:
      return e.message ?? 'is invalid';
  }
}

/**
 * Parses `file` (YAML for .yaml/.yml, JSON otherwise) and checks it against `schemaFile`;
 * `transform` (e.g. `${ENV}` interpolation) runs between the two, and its errors name the file.
 */
export function loadDataFile(
  file: string,
  schemaFile: string,
  what: string,
  transform?: (data: unknown) => unknown,
): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${what} ${file}: ${(err as Error).message}`);
  }
  const yaml = ['.yaml', '.yml'].includes(extname(file).toLowerCase());
  let data: unknown;
  try {
    data = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (err) {
    throw new Error(
      `${what} ${file} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(err as Error).message}`,
    );
  }
  if (transform !== undefined) {
    try {
      data = transform(data);
    } catch (err) {
      throw new Error(`${what} ${file}: ${(err as Error).message}`);
    }
  }
  checkAgainstSchema(data, schemaFile, `${what} ${file}`);
  return data;
}

/** Checks parsed data against a schema in schemas/; the error names `label` and the key. */
export function checkAgainstSchema(data: unknown, schemaFile: string, label: string): void {
  const validate = validator(schemaFile);
  if (!validate(data)) {
    // A failed oneOf comes after its branches' errors, and says more than they do.
    const e = validate.errors!.find((x) => x.keyword === 'oneOf') ?? validate.errors![0]!;
    throw new Error(`${label}: '${keyOf(e)}' ${reasonOf(e)}`);
  }
}
