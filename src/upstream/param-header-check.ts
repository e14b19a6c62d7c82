/**
 * Whether an upstream tool's `x-mcp-header` declarations (SEP-2243, 2026-07-28) are valid. A
 * client MUST NOT call a tool whose declarations are not: the SDK client leaves such tools out of
 * `listTools`, and the proxy's own list reader (list-pages.ts) does the same with this check.
 * The rules, from the 2026-07-28 Streamable HTTP "Schema Extension": the annotation sits only on
 * a property reached from the root through `properties` alone (not the root itself, nor under
 * items, additionalProperties, a combinator, a conditional or definitions); its value is a
 * non-empty RFC 9110 token; the property's type is string, integer or boolean; and names are
 * unique ignoring case.
 */
const KEY = 'x-mcp-header';
/** RFC 9110 §5.6.2 `token`: one or more tchar. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TYPES = new Set(['string', 'integer', 'boolean']);
/** Keywords holding subschemas that `properties` chains do not pass through. */
const ELSEWHERE = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
];
/** Keywords whose value is an object of subschemas (not one subschema). */
const MAPS = new Set(['patternProperties', 'dependentSchemas', '$defs', 'definitions']);
/** Schema nodes looked at; a schema larger than this is judged on what was seen. */
const MAX_NODES = 10_000;

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why the declarations are invalid, or undefined when they are valid (or there are none). */
export function paramHeaderProblem(inputSchema: unknown): string | undefined {
  const seen = new Map<string, string>();
  // [node, path, reached through properties only]
  const stack: [unknown, string, boolean][] = [[inputSchema, '', true]];
  for (let n = 0; stack.length > 0 && n < MAX_NODES; n++) {
    const [node, path, reachable] = stack.pop()!;
    if (!isNode(node)) continue;
    if (KEY in node) {
      const problem = declarationProblem(node, path, reachable, seen);
      if (problem !== undefined) return problem;
    }
    if (isNode(node.properties))
      for (const [name, child] of Object.entries(node.properties))
        stack.push([child, path === '' ? name : `${path}.${name}`, reachable]);
    for (const k of ELSEWHERE) {
      const sub = node[k];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : MAPS.has(k) && isNode(sub)
          ? Object.values(sub)
          : [sub];
      for (const b of branches) stack.push([b, `${path}<${k}>`, false]);
    }
  }
  return undefined;
}

function declarationProblem(
  node: Node,
  path: string,
  reachable: boolean,
  seen: Map<string, string>,
): string | undefined {
  const where = path === '' ? '(root)' : path;
  if (!reachable || path === '')
    return `${where}: ${KEY} is allowed only on a property reached through 'properties'`;
  const name = node[KEY];
  if (typeof name !== 'string' || name === '') return `${where}: ${KEY} must be a non-empty string`;
  if (!TOKEN.test(name)) return `${where}: ${KEY} '${name}' is not an HTTP token`;
  if (typeof node.type !== 'string' || !TYPES.has(node.type))
    return `${where}: ${KEY} is allowed only on a string, integer or boolean property (type ${String(node.type)})`;
  const lower = name.toLowerCase();
  const prior = seen.get(lower);
  if (prior !== undefined) return `${KEY} '${name}' is declared twice (also as '${prior}')`;
  seen.set(lower, name);
  return undefined;
}
