/**
 * The admin page's MCP client configurations (web/src/mcp-configs.ts) for other base URLs than
 * the browser test's local one: a public HTTPS URL and plain HTTP to another host.
 */
import { mcpConfigs, mcpUrl } from '../../web/src/mcp-configs';

const byId = (base: string) => Object.fromEntries(mcpConfigs(base, 'AGENT_TOKEN').map((c) => [c.id, c.text]));

describe('MCP client configurations', () => {
  it('use the public URL and the chosen variable, never a token', () => {
    const all = byId('https://memory.example.com/');
    expect(mcpUrl('https://memory.example.com/')).toBe('https://memory.example.com/mcp');
    for (const text of Object.values(all)) {
      expect(text).toContain('https://memory.example.com/mcp');
      expect(text).not.toMatch(/mem_tok_[0-9a-f]/);
    }
    expect(all['claude-code']).toBe('claude mcp add --transport http memory-store https://memory.example.com/mcp --header "Authorization: Bearer $AGENT_TOKEN"');
    expect(JSON.parse(all['claude-code-json']).mcpServers['memory-store'].headers.Authorization).toBe('Bearer ${AGENT_TOKEN}');
    expect(JSON.parse(all.cursor).mcpServers['memory-store'].headers.Authorization).toBe('Bearer ${env:AGENT_TOKEN}');
    expect(all.codex).toBe('[mcp_servers.memory-store]\nurl = "https://memory.example.com/mcp"\nbearer_token_env_var = "AGENT_TOKEN"\n');
    expect(JSON.parse(all.stdio).mcpServers['memory-store'].args).not.toContain('--allow-http');
  });

  it('tell the stdio bridge to allow plain HTTP only for another host (it refuses it otherwise)', () => {
    expect(JSON.parse(byId('http://10.0.0.5:8080').stdio).mcpServers['memory-store'].args).toContain('--allow-http');
    expect(JSON.parse(byId('http://localhost:8080').stdio).mcpServers['memory-store'].args).not.toContain('--allow-http');
  });
});
