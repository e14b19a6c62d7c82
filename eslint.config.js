// ESLint flat config for moonhub: typescript-eslint's recommended rules over the TypeScript
// sources, tests and benchmarks, and ESLint's recommended rules over the plain JS launcher.
// Formatting is prettier's job (`npm run format`), so no stylistic rules live here.
// The rules are the syntactic set (no type information), which keeps `npm run lint` fast.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Node globals the plain .js files use (the TypeScript files get theirs from @types/node).
const nodeGlobals = {
  process: 'readonly',
  console: 'readonly',
  Buffer: 'readonly',
  URL: 'readonly',
  setTimeout: 'readonly',
  clearTimeout: 'readonly',
  setImmediate: 'readonly',
  queueMicrotask: 'readonly',
};

export default defineConfig(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'examples/**',
      'coverage/**',
      '.moonhub/**',
      'bench/results/**',
    ],
  },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    rules: {
      // `_name` marks an argument or binding that is deliberately unused.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // Type-only imports stay `import type`, so they vanish from the emitted ESM.
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Tests may poke at internals and build loose fixtures.
    files: ['test/**/*.ts', 'src/**/*.test.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // The serving layer stays in small named pieces (issue "One front door").
    files: ['src/server/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Files that fit in a head, over all of src/ (src/server/ has its own block above).
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['bin/**/*.js', '*.js', '*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: nodeGlobals,
    },
  },
);
