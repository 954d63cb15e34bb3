/**
 * An object whose methods forward to whatever `target()` returns at call time. Binding a port
 * (e.g. MemoryIndex) to such a delegate lets services inject the port once while the active
 * adapter behind it changes at run time.
 */
export function delegateTo<T extends object>(target: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_obj, prop) {
      // Nest probes providers for lifecycle hooks before the backends are open.
      const t = target() as Record<string | symbol, unknown> | undefined;
      if (t === undefined) return undefined;
      const v = t[prop];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}
