import { bindingAllows, bindingEntryProblem, bindingWithin, NAMESPACE_PATTERN, namespaceNameProblem, resolveNamespace } from './namespace';

describe('namespaces', () => {
  it('accepts lowercase segment names and refuses the rest', () => {
    for (const ok of ['default', 'acme', 'acme/alice', 'coder-bot', 'a.b_c-1/x']) expect(namespaceNameProblem(ok)).toBeNull();
    for (const bad of ['', 'Acme', 'acme/', '/acme', 'a//b', 'a/../b', '.', 'a b', 'x'.repeat(129), 'a/*']) expect(namespaceNameProblem(bad)).not.toBeNull();
    expect(bindingEntryProblem('acme/*')).toBeNull();
    expect(bindingEntryProblem('*')).toBeNull();
    expect(bindingEntryProblem('acme/**')).not.toBeNull();
  });

  it('states the same rules as the OpenAPI pattern', () => {
    const pattern = new RegExp(NAMESPACE_PATTERN);
    for (const name of ['default', 'acme/alice', '.hidden', '..x', '...', 'a/.b', 'Acme', 'a/../b', '.', 'a/.', 'a//b', 'a/', 'a b'])
      expect([name, pattern.test(name)]).toEqual([name, namespaceNameProblem(name) === null]);
  });

  it('matches exact names, prefixes and *', () => {
    expect(bindingAllows(['acme/*'], 'acme')).toBe(true);
    expect(bindingAllows(['acme/*'], 'acme/alice')).toBe(true);
    expect(bindingAllows(['acme/*'], 'acme-corp')).toBe(false);
    expect(bindingAllows(['acme'], 'acme/alice')).toBe(false);
    expect(bindingAllows(['*'], 'anything/at/all')).toBe(true);
  });

  it('lets a binding grant only what lies inside it', () => {
    expect(bindingWithin(['acme/*'], ['acme/alice', 'acme/bob/*'])).toBe(true);
    expect(bindingWithin(['acme/*'], ['*'])).toBe(false);
    expect(bindingWithin(['acme/*'], ['other'])).toBe(false);
    expect(bindingWithin(['acme'], ['acme/*'])).toBe(false);
    expect(bindingWithin(['*'], ['*'])).toBe(true);
  });

  it('resolves the namespace of a request', () => {
    expect(resolveNamespace(['*'], undefined)).toBe('default');
    expect(resolveNamespace(['acme/alice'], undefined)).toBe('acme/alice');
    expect(resolveNamespace(['acme/*'], 'acme/bob')).toBe('acme/bob');
    expect(() => resolveNamespace(['acme/*'], undefined)).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => resolveNamespace(['a', 'b'], undefined)).toThrow(/x-memory-namespace/);
    expect(() => resolveNamespace(['acme/*'], 'other')).toThrow(expect.objectContaining({ status: 403, message: expect.stringContaining('"other"') }));
    expect(() => resolveNamespace(['*'], 'Bad Name')).toThrow(expect.objectContaining({ status: 400 }));
  });
});
