/**
 * Input validation for tool arguments. Schemas are compiled once, at registration, with the
 * JSON Schema dialect they declare (2020-12 unless `$schema` names draft-07), so a call pays only
 * for running the compiled validator.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import AjvDraft7 from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { setFlagsFromString } from 'node:v8';
import { RegistryError } from './errors.js';
import { linearEnum } from './linear-enum.js';
import { linearUniqueItems } from './unique-items.js';

// A schema's `pattern` runs on a client's string on the hub's thread: V8's backtracking engine
// would let `^(a+)+$` freeze it for seconds on 27 characters. The `l` flag (V8's linear-time
// engine, process-wide flag, read when a RegExp is made) matches in linear time or refuses.
setFlagsFromString('--enable-experimental-regexp-engine');
/** V8's linear-time flag (a name, since linters know only the standard flags). */
const LINEAR: string = 'l';

/** Matches every string: stands for a pattern the hub does not enforce. */
const ANY = /(?:)/;

/**
 * A pattern as a linear-time RegExp, or undefined when the linear engine cannot run it
 * (backreferences, lookaround) or it needs the `u` flag's syntax (`\p{..}`, `\u{..}`, astral
 * characters: without `u` they would mean something else). Throws on a pattern that is not
 * ECMA-262 at all, which makes the schema invalid.
 */
function linearOrNot(pattern: string): RegExp | undefined {
  new RegExp(pattern, 'u'); // the pattern's syntax as JSON Schema reads it (ECMA-262, unicode)
  if (/\\[pP]\{|\\u\{|[\uD800-\uDFFF]/.test(pattern)) return undefined;
  try {
    return new RegExp(pattern, LINEAR);
  } catch {
    return undefined;
  }
}

/**
 * ajv's RegExp maker for `pattern` and `patternProperties`. A pattern the linear engine cannot
 * run is not enforced by the hub rather than refused: refusing would drop a plugin's or an
 * upstream's whole tool for a keyword that only narrows its input, and the handler or upstream
 * still sees the argument. Such patterns are taken out before the compile (`withoutPatterns`)
 * and the registration is told (`unenforced`); the match-all stands in only for one the scan
 * did not reach (a schema past PATTERN_SCAN_NODES).
 */
function linearRegExp(pattern: string): RegExp {
  return linearOrNot(pattern) ?? ANY;
}
linearRegExp.code = 'linearRegExp';

const options = {
  strict: false,
  allErrors: false,
  validateFormats: false,
  code: { regExp: linearRegExp },
} as const;
type Ajv = {
  compile(schema: object): ValidateFunction;
  validateSchema(schema: object): boolean | Promise<unknown>;
  errors?: ErrorObject[] | null;
  errorsText(errors?: ErrorObject[] | null): string;
};
let ajv2020: Ajv | undefined;
let ajv7: Ajv | undefined;
/**
 * An ajv instance keeps every schema it compiled (its cache and its code scope hold them), so
 * a plugin re-registering tools, or an upstream re-listed on every list_changed, grew the hub's
 * heap without end. Instances are replaced after this many compiles (the validators they made
 * keep working), and a definition seen before is not compiled again.
 */
const COMPILES_PER_INSTANCE = 500;
let compiles = 0;
/** Compiled validators by schema text (which names the dialect), newest last. */
const compiled = new Map<string, Compiled>();
/** A compiled schema and the patterns it does not enforce (found once, with the compile). */
interface Compiled {
  validate: ValidateFunction;
  unenforced: string[];
}
const COMPILED_KEPT = 1024;

export type ArgumentValidator = ((args: unknown) => string | undefined) & {
  /** The schema's patterns the hub does not enforce (not runnable in linear time). */
  readonly unenforced?: readonly string[];
  /** The schema is past MAX_COMPILED_SCHEMA_MEMBERS: the hub does not enforce it. */
  readonly tooLarge?: true;
};

/** Compiles `schema`; throws `invalid_definition` naming what is wrong with it. */
export function compileValidator(schema: Record<string, unknown>, what: string): ArgumentValidator {
  let made: Compiled;
  try {
    made = validatorOf(schema);
  } catch (err) {
    throw new RegistryError(
      'invalid_definition',
      `${what}: input_schema is not a valid JSON Schema: ${(err as Error).message}`,
    );
  }
  const { validate, unenforced } = made;
  const check = (args: unknown): string | undefined =>
    validate(args) ? undefined : describe(validate.errors ?? []);
  return unenforced.length > 0 ? Object.assign(check, { unenforced }) : check;
}

export type ArgumentValidation =
  /** Compiled at registration (in-process plugins, the hub's own tools). */
  | 'now'
  /** Checked against the meta-schema at registration, compiled at the first call (upstreams). */
  | 'deferred'
  /** Checked and compiled in the plugin's worker, which also checks each call's arguments. */
  | 'worker';

/**
 * Members of a schema (objects, arrays and their entries) the hub compiles for one tool. ajv's
 * compile is ~0.1 ms a member on a slow machine, more than linear past a few thousand, and past
 * ~8,000 its generated code overflowed the stack: a schema of 2,000 properties held the hub's
 * thread 3.4 s at its tool's first call, and 0.5 s again at each later one. A larger schema is
 * not enforced by the hub (the upstream checks its own input), with a warning.
 */
export const MAX_COMPILED_SCHEMA_MEMBERS = 2_000;

/**
 * The validator of a tool registered on the hub by `how` ('now' compiles here and now). A
 * plugin registering many new schemas, or an upstream listing thousands of tools with distinct
 * ones (2,000 small ones: 2.3 s) at every import, held the hub's thread for the compile of each.
 * Now the hub compiles an upstream's tool at its first call, once, and never a plugin worker's:
 * the worker compiled it at `mcp.tool` and checks every call's arguments itself.
 */
export function toolValidator(
  schema: Record<string, unknown>,
  what: string,
  how: ArgumentValidation = 'now',
): ArgumentValidator {
  if (how === 'now') return compileValidator(schema, what);
  const unenforced = unenforcedPatterns(schema);
  const extra = unenforced.length > 0 ? { unenforced } : {};
  if (how === 'worker') return Object.assign(() => undefined, extra);
  if (tooLargeToCompile(schema))
    return Object.assign(() => undefined, extra, { tooLarge: true as const });
  metaCheck(schema, what);
  return Object.assign(compiledAtFirstCall(schema, what), extra);
}

/** Whether `schema` is past MAX_COMPILED_SCHEMA_MEMBERS, which the hub does not compile. */
export function tooLargeToCompile(schema: unknown): boolean {
  return schemaMembers(schema, MAX_COMPILED_SCHEMA_MEMBERS) > MAX_COMPILED_SCHEMA_MEMBERS;
}

/** A validator that compiles `schema` at its first use; a failed compile is kept, not retried. */
function compiledAtFirstCall(
  schema: Record<string, unknown>,
  what: string,
): (args: unknown) => string | undefined {
  let check: ((args: unknown) => string | undefined) | undefined;
  let failed: string | undefined;
  return (args) => {
    if (check === undefined && failed === undefined) {
      try {
        check = compileValidator(schema, what);
      } catch (err) {
        // Compiling again at every call would cost the hub's thread each time.
        failed = `its input schema could not be compiled here: ${(err as Error).message}`;
      }
    }
    return failed ?? check!(args);
  };
}

/** Members of `schema` counted up to `stopAfter` + 1 (a walk, not a recursion). */
function schemaMembers(schema: unknown, stopAfter: number): number {
  let count = 0;
  const stack: unknown[] = [schema];
  while (stack.length > 0 && count <= stopAfter) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    for (const value of Array.isArray(node) ? node : Object.values(node as object)) {
      count++;
      if (typeof value === 'object' && value !== null) stack.push(value);
    }
  }
  return count;
}

/**
 * Instances that only check schemas against their meta-schema, never replaced: an instance
 * compiles its meta-schema at its first check (~150 ms of the hub's thread on a slow machine),
 * which the compiling instances would pay again each time they are replaced.
 */
let meta2020: Ajv | undefined;
let meta7: Ajv | undefined;

function metaFor(schema: Record<string, unknown>): Ajv {
  return olderDraft(schema)
    ? (meta7 ??= new AjvDraft7.default(options))
    : (meta2020 ??= new Ajv2020(options));
}

/**
 * Compiles the 2020-12 meta-schema now (an upstream proxy calls it as it starts), so the first
 * import's turn does not pay for it as well.
 */
export function prepareSchemaChecks(): void {
  metaFor({}).validateSchema({});
}

/** Refuses (`invalid_definition`) a schema that its dialect's meta-schema refuses. */
function metaCheck(schema: Record<string, unknown>, what: string): void {
  const ajv = metaFor(schema);
  if (ajv.validateSchema(schema) === true) return;
  throw new RegistryError(
    'invalid_definition',
    `${what}: input_schema is not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`,
  );
}

/** Nodes of a schema looked at for patterns; past it the rest goes unnamed (ajv still compiled it). */
const PATTERN_SCAN_NODES = 10_000;

/** The `pattern` values and `patternProperties` keys in `schema` the linear engine cannot run. */
function unenforcedPatterns(schema: unknown): string[] {
  const found = new Set<string>();
  const stack: unknown[] = [schema];
  for (let seen = 0; stack.length > 0 && seen < PATTERN_SCAN_NODES; seen++) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string') check(value);
      if (key === 'patternProperties' && typeof value === 'object' && value !== null)
        for (const p of Object.keys(value)) check(p);
      if (typeof value === 'object' && value !== null) stack.push(value);
    }
  }
  return [...found];
  function check(pattern: string): void {
    try {
      if (linearOrNot(pattern) === undefined) found.add(pattern);
    } catch {
      // Not ECMA-262: ajv refused the schema already.
    }
  }
}

/** Keywords whose values are data, not schemas: a `pattern` key there is not a keyword. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/**
 * `schema` without the patterns in `drop`: a `pattern` keyword is left out (the string is not
 * checked); a `patternProperties` entry is left out with its object's `additionalProperties`
 * (the properties it would have matched are neither checked nor refused as extra). Standing in
 * for such a pattern with a RegExp that matches everything would be right for `pattern` but
 * would apply a `patternProperties` subschema to every property.
 */
function withoutPatterns(node: unknown, drop: ReadonlySet<string>): unknown {
  if (Array.isArray(node)) return node.map((v) => withoutPatterns(v, drop));
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  let droppedProperty = false;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'pattern' && typeof value === 'string' && drop.has(value)) continue;
    if (key === 'patternProperties' && typeof value === 'object' && value !== null) {
      const kept: Record<string, unknown> = {};
      for (const [p, sub] of Object.entries(value)) {
        if (drop.has(p)) droppedProperty = true;
        else kept[p] = withoutPatterns(sub, drop);
      }
      out[key] = kept;
      continue;
    }
    out[key] = DATA_KEYWORDS.has(key) ? value : withoutPatterns(value, drop);
  }
  if (droppedProperty) delete out.additionalProperties;
  return out;
}

function validatorOf(schema: Record<string, unknown>): Compiled {
  const key = JSON.stringify(schema);
  const seen = compiled.get(key);
  if (seen) {
    compiled.delete(key);
    compiled.set(key, seen);
    return seen;
  }
  if (++compiles > COMPILES_PER_INSTANCE) {
    compiles = 1;
    ajv2020 = ajv7 = undefined;
  }
  const ajv = ajvFor(schema);
  const unenforced = unenforcedPatterns(schema);
  const usable =
    unenforced.length === 0
      ? schema
      : (withoutPatterns(schema, new Set(unenforced)) as Record<string, unknown>);
  const validate = ajv.compile(stripId(usable));
  const made = { validate, unenforced };
  compiled.set(key, made);
  if (compiled.size > COMPILED_KEPT) compiled.delete(compiled.keys().next().value!);
  return made;
}

/** The ajv instance of the schema's dialect (2020-12 unless `$schema` names an older draft). */
function ajvFor(schema: Record<string, unknown>): Ajv {
  return olderDraft(schema)
    ? (ajv7 ??= withLinearKeywords(new AjvDraft7.default(options)))
    : (ajv2020 ??= withLinearKeywords(new Ajv2020(options)));
}

function olderDraft(schema: Record<string, unknown>): boolean {
  const dialect = typeof schema.$schema === 'string' ? schema.$schema : '';
  return (
    dialect.includes('draft-07') || dialect.includes('draft-06') || dialect.includes('draft-04')
  );
}

/** ajv with `uniqueItems` and `enum` replaced by linear ones (the client sizes what they scan). */
function withLinearKeywords<
  T extends Parameters<typeof linearUniqueItems>[0] & Parameters<typeof linearEnum>[0],
>(ajv: T): T {
  linearUniqueItems(ajv);
  linearEnum(ajv);
  return ajv;
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
