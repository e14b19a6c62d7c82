/**
 * The config file (`--config FILE`, JSON or YAML by extension), checked against the published
 * schema in schemas/config.schema.json; an error names the key at fault.
 */
import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';

export interface HubConfig {
  hub_id?: string;
  listen?: { host?: string; port?: number };
  plugins?: { dirs?: string[] };
}

const schemaPath = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../..',
  'schemas/config.schema.json',
);
let validate: ReturnType<Ajv2020['compile']> | undefined;

export function loadConfig(file: string): HubConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = ['.yaml', '.yml'].includes(extname(file).toLowerCase())
      ? parseYaml(text)
      : JSON.parse(text);
  } catch (err) {
    throw new Error(
      `config file ${file} is not valid ${extname(file) === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
    );
  }
  validate ??= new Ajv2020({ allErrors: false, strict: true }).compile(
    JSON.parse(readFileSync(schemaPath, 'utf8')) as object,
  );
  if (!validate(data)) {
    const e = validate.errors?.[0];
    const at = e?.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
    const extra = (e?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
    const key = extra ? (at ? `${at}.${extra}` : extra) : at || '(top level)';
    const why = extra ? 'is not a known setting' : (e?.message ?? 'is invalid');
    throw new Error(`config file ${file}: '${key}' ${why}`);
  }
  const config = data as HubConfig;
  // Directories in the file are relative to the file, not to wherever the hub was started.
  if (config.plugins?.dirs)
    config.plugins.dirs = config.plugins.dirs.map((d) => resolve(dirname(file), d));
  return config;
}
