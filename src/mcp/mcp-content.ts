import { Injectable } from '@nestjs/common';
import { McpServer, ProtocolError, ProtocolErrorCode, ResourceNotFoundError, ResourceTemplate } from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { TokenPrincipal } from '../common/auth/principal';
import { NotFoundError } from '../common/errors';
import { resolveNamespace } from '../namespaces/namespace';
import { MemoriesService } from '../memories/memories.service';
import { MetaService } from '../meta/meta.service';

export const GUIDE_URI = 'memory-store://guide';
const MARKDOWN = 'text/markdown';
/** How many of the newest memories resources/list offers (the template reaches every one). */
const LISTED_RESOURCES = 50;

/**
 * Resources and prompts: every memory as `memory://<id>` (its stored markdown file, front matter
 * included, exactly as the REST download serves it), the usage guide, and two prompts.
 */
@Injectable()
export class McpContent {
  constructor(
    private readonly memories: MemoriesService,
    private readonly meta: MetaService,
  ) {}

  register(server: McpServer, principal: TokenPrincipal, baseUrl: string, headerNamespace?: string): void {
    const canRead = principal.scopes.includes('memory:read');
    // Resources have no arguments: the token's one namespace, or the X-Memory-Namespace header (issue 43).
    const namespace = (): string => {
      try {
        return resolveNamespace(principal.namespaces, headerNamespace);
      } catch (e) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, (e as Error).message);
      }
    };
    const canWrite = principal.scopes.includes('memory:write');

    server.registerResource(
      'memory',
      new ResourceTemplate('memory://{id}', {
        list: canRead
          ? async () => {
              const page = await this.memories.list(namespace(), { q: '', limit: LISTED_RESOURCES, page: 1 });
              return {
                resources: page.rows.map((r) => ({ uri: `memory://${r.id}`, name: r.title ?? r.id, title: r.title ?? undefined, mimeType: MARKDOWN })),
              };
            }
          : undefined,
      }),
      { title: 'A memory', description: 'One memory as its markdown file: YAML front matter (id, title, type, scope, tags, agent, project, dates), then the content.', mimeType: MARKDOWN },
      async (uri, vars) => {
        if (!canRead) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'This API token lacks the memory:read scope, so it cannot read memories.');
        const id = String(vars.id ?? '');
        try {
          const file = await this.memories.download(namespace(), id);
          return { contents: [{ uri: uri.href, mimeType: MARKDOWN, text: file.toString('utf8') }] };
        } catch (e) {
          if (e instanceof NotFoundError) throw new ResourceNotFoundError(uri.href, `No memory has the id ${JSON.stringify(id)}`);
          throw e;
        }
      },
    );

    server.registerResource(
      'guide',
      GUIDE_URI,
      { title: 'Memory Store guide', description: 'How Memory Store works: authentication and scopes, memory fields, search syntax, limits, the REST API.', mimeType: MARKDOWN },
      (uri) => ({ contents: [{ uri: uri.href, mimeType: MARKDOWN, text: this.meta.guide(baseUrl) }] }),
    );

    if (canRead) {
      server.registerPrompt(
        'recall',
        {
          title: 'Recall what we know about a topic',
          description: 'Look up everything Memory Store knows about a topic and summarise it, citing memory ids.',
          argsSchema: z.object({
            topic: z.string().describe('The topic, question or task to recall knowledge about.'),
            project: z.string().optional().describe('Only memories of this project.'),
          }),
        },
        ({ topic, project }) => ({
          messages: [
            {
              role: 'user',
              content: {
                type: 'text',
                text: [
                  `Recall what Memory Store knows about: ${topic}`,
                  '',
                  `1. Call recall_context with task ${JSON.stringify(topic)}${project ? ` and project ${JSON.stringify(project)}` : ''}.`,
                  '2. If that finds little, call search_memories with other words for the same topic.',
                  '3. Summarise what the memories say, grouped by subject, citing each memory id in brackets. Point out memories that contradict each other or look outdated.',
                  '4. If nothing relevant exists, say so plainly; do not invent knowledge.',
                ].join('\n'),
              },
            },
          ],
        }),
      );
    }

    if (canWrite) {
      server.registerPrompt(
        'save_decisions',
        {
          title: 'Save the key decisions of this session',
          description: 'Go through the conversation and save its durable decisions, facts and preferences as memories, without duplicates.',
          argsSchema: z.object({
            project: z.string().optional().describe('The project to file the memories under.'),
            tags: z.string().optional().describe('Extra tags for every memory, comma-separated.'),
          }),
        },
        ({ project, tags }) => ({
          messages: [
            {
              role: 'user',
              content: {
                type: 'text',
                text: [
                  'Save the key decisions of this session to Memory Store.',
                  '',
                  '1. List the durable outcomes of this conversation: decisions taken (and why), facts learned, preferences stated, follow-up tasks. Leave out chit-chat, dead ends and anything secret (passwords, tokens, keys).',
                  '2. For each one, call search_memories first. If a memory on the same subject exists, update_memory it instead of saving a second one.',
                  `3. Otherwise call create_memory with a short title, self-contained markdown content, the matching type (decision, fact, preference or task)${project ? `, project ${JSON.stringify(project)}` : ''}${
                    tags
                      ? ` and the tags ${JSON.stringify(
                          tags
                            .split(',')
                            .map((t) => t.trim())
                            .filter(Boolean),
                        )} besides your own`
                      : ''
                  }.`,
                  '4. Finish with a list of what you saved or updated, with the memory ids.',
                ].join('\n'),
              },
            },
          ],
        }),
      );
    }
  }
}
