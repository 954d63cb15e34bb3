import { Injectable } from '@nestjs/common';
import { McpServer } from '@modelcontextprotocol/server';
import type { TokenPrincipal } from '../common/auth/principal';
import { McpContent } from './mcp-content';
import { McpTools } from './mcp-tools';

export const SERVER_INFO = { name: 'memory-store', title: 'Memory Store', version: '1.0.0' };

/** Arguments beyond this many array elements and object members are refused before a tool runs. */
const MAX_TOOL_INPUT_ELEMENTS = 5_000;

/** What the model reads about this server when it connects. */
export const INSTRUCTIONS = [
  'Memory Store is your long-term memory across conversations: short markdown notes with a title, type, tags and project.',
  '- At the start of a task, call recall_context with the task in a sentence; before answering questions that past decisions, facts or preferences may bear on, call search_memories.',
  '- Save (create_memory) each durable decision, fact, preference or recurring task as one short, self-contained memory with a clear title and a few tags. Search first: never save a second memory on a subject that already has one.',
  '- Update (update_memory) a memory that became outdated or incomplete instead of adding a contradicting one.',
  '- Delete (delete_memory) only a memory that is wrong or that the user asked to forget.',
  '- Never store secrets (passwords, tokens, keys). Cite memory ids when you rely on them.',
].join('\n');

/** A fresh McpServer per HTTP request (stateless), with what the token's scopes allow. */
@Injectable()
export class McpServerFactory {
  constructor(
    private readonly tools: McpTools,
    private readonly content: McpContent,
  ) {}

  create(principal: TokenPrincipal, baseUrl: string, namespace?: string): McpServer {
    const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS, maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS });
    this.tools.register(server, principal, namespace);
    this.content.register(server, principal, baseUrl, namespace);
    return server;
  }
}
