// @ts-check
// ESLint with type information (typescript-eslint's recommendedTypeChecked), floating promises
// refused, and import cycles refused (eslint-plugin-import-x; type-only cycles are madge's job:
// `npm run lint` runs both). No blanket disables: a rule that is wrong for a line says so there.
import eslint from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { defineConfig } from 'eslint/config';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'coverage/', 'models/', 'web/dist/', 'bench/results/', 'node_modules/'] },
  {
    files: ['**/*.ts'],
    extends: [eslint.configs.recommended, tseslint.configs.recommendedTypeChecked],
    plugins: { 'import-x': importX },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    settings: {
      // import-x reads only the files it knows how to parse: without these, no-cycle never follows a .ts import.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // `_name` marks a value left out on purpose (a destructured field, an unused parameter).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // Methods implementing Promise-returning ports and Nest hooks are `async` by their contract.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['test/**/*.ts', '**/*.spec.ts', '**/*.contract.ts'],
    rules: {
      // supertest's `res.body` is `any` by design; the tests assert on it.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // jest's `expect(obj.method)` idiom passes a method without calling it.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
