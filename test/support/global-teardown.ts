import { stopAll } from './global-setup';

/** Stops every server the global setup started (and drops this run's databases on a real MongoDB). */
export default async function globalTeardown(): Promise<void> {
  await stopAll(globalThis.__memstoreTestServers);
  globalThis.__memstoreTestServers = undefined;
}
