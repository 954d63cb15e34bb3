/**
 * Ready-to-paste MCP client configurations for the Agent set-up tab. None of them contains the
 * token itself: each reads it from the environment variable the administrator names (or, for
 * VS Code, prompts for it once and keeps it in its secret storage).
 */

export interface McpClientConfig {
  id: string;
  client: string;
  /** Where the text goes. */
  where: string;
  text: string;
}

const SERVER_NAME = 'memory-store';

function isLocal(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

export function mcpUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/mcp`;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

export function mcpConfigs(baseUrl: string, tokenVar: string): McpClientConfig[] {
  const url = mcpUrl(baseUrl);
  const bridgeArgs = ['-y', 'mcp-remote', url, '--header', 'Authorization:${MEMORY_STORE_AUTH}'];
  // mcp-remote refuses plain http to another host unless told (the token would cross the network in clear).
  if (new URL(url).protocol === 'http:' && !isLocal(new URL(url))) bridgeArgs.push('--allow-http');
  return [
    {
      id: 'claude-code',
      client: 'Claude Code (command line)',
      where: `Run in a shell where $${tokenVar} holds the token (add --scope user to use it in every project).`,
      text: `claude mcp add --transport http ${SERVER_NAME} ${url} --header "Authorization: Bearer $${tokenVar}"`,
    },
    {
      id: 'claude-code-json',
      client: 'Claude Code (.mcp.json)',
      where: `A .mcp.json file at the root of the project; Claude Code reads the token from $${tokenVar} when it starts.`,
      text: json({ mcpServers: { [SERVER_NAME]: { type: 'http', url, headers: { Authorization: `Bearer \${${tokenVar}}` } } } }),
    },
    {
      id: 'cursor',
      client: 'Cursor',
      where: `~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project); Cursor reads the token from $${tokenVar}.`,
      text: json({ mcpServers: { [SERVER_NAME]: { url, headers: { Authorization: `Bearer \${env:${tokenVar}}` } } } }),
    },
    {
      id: 'vscode',
      client: 'VS Code',
      where: '.vscode/mcp.json in the workspace; VS Code asks for the token once and keeps it in its secret storage.',
      text: json({
        inputs: [{ type: 'promptString', id: 'memory-store-token', description: 'Memory Store API token (mem_tok_…)', password: true }],
        servers: { [SERVER_NAME]: { type: 'http', url, headers: { Authorization: 'Bearer ${input:memory-store-token}' } } },
      }),
    },
    {
      id: 'codex',
      client: 'Codex',
      where: `~/.codex/config.toml; Codex sends the token from $${tokenVar} as a Bearer header.`,
      text: `[mcp_servers.${SERVER_NAME}]\nurl = "${url}"\nbearer_token_env_var = "${tokenVar}"\n`,
    },
    {
      id: 'stdio',
      client: 'Clients that only run local (stdio) servers',
      where: `The mcp-remote bridge (npm) runs beside the client and forwards to this endpoint; put the token after "Bearer " in MEMORY_STORE_AUTH.`,
      text: json({ mcpServers: { [SERVER_NAME]: { command: 'npx', args: bridgeArgs, env: { MEMORY_STORE_AUTH: 'Bearer mem_tok_…' } } } }),
    },
  ];
}

/** A connector that signs in with OAuth (claude.ai, ChatGPT): the URL to paste and what the person will see. */
export interface ConnectorGuide {
  id: string;
  client: string;
  steps: string[];
}

/** Steps for the OAuth connectors, for the OAuth MCP endpoint `url` (the resource of /.well-known/oauth-protected-resource/mcp/oauth). */
export function connectorGuides(url: string): ConnectorGuide[] {
  const consent = (host: string) =>
    `A Memory Store page opens: sign in with the administrator password, check the app’s name and that it will send you back to ${host}, tick the permissions it may have (delete is off unless you tick it) and click Allow.`;
  const after =
    'Back in the app, Memory Store shows as connected. Its token appears on the API tokens tab as “<app name> (OAuth)”; it renews itself every hour, and revoking it there disconnects the app.';
  return [
    {
      id: 'claude-ai',
      client: 'claude.ai / Claude desktop',
      steps: [
        'In claude.ai (or the Claude desktop app): Settings → Connectors → Add custom connector.',
        `Name it Memory Store and paste the URL ${url}; leave the advanced OAuth fields empty. Click Add, then Connect.`,
        consent('claude.ai'),
        `${after} Connectors added on claude.ai also appear in the desktop app.`,
      ],
    },
    {
      id: 'chatgpt',
      client: 'ChatGPT',
      steps: [
        'In ChatGPT: Settings → Apps & Connectors → Advanced settings: turn on Developer mode; then Create (a new connector).',
        `Name it Memory Store, paste the URL ${url} as the MCP server URL, choose OAuth as the authentication, confirm that you trust it, and click Create.`,
        consent('chatgpt.com'),
        after,
      ],
    },
  ];
}
