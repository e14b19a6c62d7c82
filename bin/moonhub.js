#!/usr/bin/env node
// Thin launcher: the CLI lives in dist/ after `npm run build`.
import { main } from '../dist/src/cli/main.js';

main(process.argv).catch((err) => {
  process.stderr.write(`moonhub: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
