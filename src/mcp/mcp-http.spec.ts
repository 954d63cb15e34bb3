import { originAllowed } from './mcp-http';

describe('MCP Origin check (DNS rebinding)', () => {
  const LOCAL = 'http://127.0.0.1:8080';

  it('lets requests without Origin through (agents, CLIs)', () => {
    expect(originAllowed(undefined, LOCAL, null)).toBe(true);
  });

  it.each([
    ['http://127.0.0.1:8080', LOCAL],
    ['http://localhost:8080', LOCAL],
    ['http://[::1]:8080', LOCAL],
    ['http://127.0.0.1:8080', 'http://localhost:8080'],
    ['http://10.0.0.5:8080', 'http://10.0.0.5:8080'],
  ])('accepts the service itself: %s calling %s', (origin, target) => {
    expect(originAllowed(origin, target, null)).toBe(true);
  });

  it.each([
    ['http://evil.example', LOCAL],
    ['http://localhost:9999', LOCAL], // another local app
    ['https://localhost:8080', LOCAL], // another scheme
    ['null', LOCAL],
    ['not a url', LOCAL],
    ['file:///tmp/x.html', LOCAL],
    ['http://rebind.example', 'http://rebind.example'], // a DNS name pointing at us: could be rebinding
  ])('refuses %s calling %s', (origin, target) => {
    expect(originAllowed(origin, target, null)).toBe(false);
  });

  it('accepts the public URL origin, behind a proxy too', () => {
    expect(originAllowed('https://memory.example.com', 'http://10.0.0.5:8080', 'https://memory.example.com')).toBe(true);
    expect(originAllowed('https://memory.example.com', 'https://memory.example.com', 'https://memory.example.com/base')).toBe(true);
    expect(originAllowed('https://other.example.com', 'https://memory.example.com', 'https://memory.example.com')).toBe(false);
  });
});
