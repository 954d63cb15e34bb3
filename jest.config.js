/**
 * One jest run for unit specs (src/**\/*.spec.ts), contract suites and end-to-end specs (test/).
 * The global setup starts the test servers it can (s3rver in-process, FerretDB when its binary
 * is present) and says by name which suites have no server.
 */

/** @type {import('jest').Config} */
module.exports = {
  rootDir: '.',
  moduleFileExtensions: ['js', 'json', 'ts'],
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts'],
  transform: {
    '/node_modules/(oidc-provider|jose)/.+\\.js$': '<rootDir>/test/support/esm-transformer.js',
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false, astTransformers: { before: ['<rootDir>/test/support/swagger-transformer.js'] } }],
  },
  // oidc-provider and jose are ES modules only: transformed to CommonJS for jest (test/support/esm-transformer.js).
  transformIgnorePatterns: ['/node_modules/(?!(oidc-provider|jose)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
  verbose: false,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
