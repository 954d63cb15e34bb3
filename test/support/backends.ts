/**
 * The backend pairs the end-to-end suites run on. Write e2e suites as
 *   describe.each(testBackends())('memories API on $name', (backend) => { ... createTestApp(await backend.env()) ... })
 * so that every suite runs once per pair. The embedded pair is always present; the
 * production-backends work adds MongoDB + S3 when the global setup has started those servers.
 * `env()` returns fresh, isolated settings (own database / bucket) for one test app.
 */
export interface TestBackend {
  name: string;
  env(): Promise<Record<string, string>>;
}

export function testBackends(): TestBackend[] {
  return [{ name: 'embedded (sqlite + filesystem)', env: async () => ({}) }];
}
