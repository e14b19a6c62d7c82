/** Message templates of the error registry: `{slot}`s filled from parameters. Imports nothing. */

/** Fills `{slot}`s of a template; a missing slot becomes empty. */
export function fill(
  template: string,
  params: Readonly<Record<string, unknown>> | undefined,
): string {
  if (params === undefined || template.indexOf('{') === -1) return template;
  return template.replace(/\{(\w+)\}/g, (_, k: string) =>
    params[k] === undefined ? '' : String(params[k]),
  );
}
