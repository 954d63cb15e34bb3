import { Injectable, Logger } from '@nestjs/common';
import type { CallToolResult, McpServer, StandardSchemaWithJSON, Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import { AuditService } from '../audit/audit.service';
import type { Scope, TokenPrincipal } from '../common/auth/principal';
import { AppError, BackendUnavailableError, NotFoundError, RequestValidationError } from '../common/errors';
import { toErrorResponse } from '../common/http-exception.filter';
import { resolveNamespace } from '../namespaces/namespace';
import { AppValidationPipe } from '../common/validation.pipe';
import { CreateMemoryDto } from '../memories/dto/create-memory.dto';
import { ListMemoriesQueryDto } from '../memories/dto/list-memories-query.dto';
import type { MemoryDto } from '../memories/dto/memory-response.dto';
import { UpdateMemoryDto } from '../memories/dto/update-memory.dto';
import { MemoriesService, MemoryNotFoundError } from '../memories/memories.service';
import { canRead, mapMemory, mapStats, mapWritten, sentFields } from '../memories/memory.mapper';
import { updateHint } from '../memories/supersession';
import { principalAuthor } from '../memories/write-headers';
import {
  createInput,
  createOutput,
  deleteInput,
  deleteOutput,
  getInput,
  listOutput,
  listRecentInput,
  memoryOutput,
  recallInput,
  recallOutput,
  searchInput,
  statsInput,
  statsOutput,
  updateInput,
  writtenOutput,
  type CreateInput,
  type ListRecentInput,
  type RecallInput,
  type RecallOutput,
  type SearchInput,
  type UpdateInput,
} from './mcp-schemas';
import { DEFAULT_TOKEN_BUDGET, noMatchNote, selectForBudget, taskQuery } from './recall';

const DEFAULT_LIMIT = 10;
/** Search hits recall_context considers (it stops loading once the budget is spent). */
const RECALL_CANDIDATES = 30;
const RECALL_BUDGET = { min: 100, max: 20_000 };
/** The search accepts at most this many characters in q (ListMemoriesQueryDto). */
const MAX_QUERY_CHARS = 1000;

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

interface ToolSpec {
  name: string;
  scope: Scope;
  title: string;
  description: string;
  input: StandardSchemaWithJSON;
  output: StandardSchemaWithJSON;
  annotations: ToolAnnotations;
  /** `ns`: the call's namespace, resolved from its `namespace` argument (or the header) against the token's binding. */
  run(args: never, principal: TokenPrincipal, ns: string): Promise<Record<string, unknown>>;
}

/** What search_memories adds to list_recent's arguments (in the REST query's names). */
interface ListExtra {
  q?: string;
  page?: number;
  after?: string;
  mode?: SearchInput['mode'];
  query_date?: string;
  min_score?: number;
  explain?: boolean;
}

/** The arguments of a tool as the DTO names them (the tools say `tags` and `cursor` where the REST query says `tag` and `after`). */
const DTO_NAMES: Record<string, string> = { tag: 'tags', after: 'cursor' };

/**
 * The MCP tools: each one a thin call into MemoriesService, with its arguments checked by the
 * same DTO validation as the REST API (AppValidationPipe) and the service's own rules. Errors a
 * model can fix come back as tool results with isError and a sentence saying what to change.
 */
@Injectable()
export class McpTools {
  private readonly logger = new Logger('MCP');
  private readonly pipe = new AppValidationPipe();
  private readonly specs: ToolSpec[];
  /** tools/list entries, converted to JSON Schema once per process. */
  private readonly listed = new Map<string, Tool>();

  constructor(
    private readonly memories: MemoriesService,
    private readonly audit: AuditService,
  ) {
    this.specs = [
      {
        name: 'search_memories',
        scope: 'memory:read',
        title: 'Search memories',
        description:
          'Full-text search over the memories, most relevant first; use it before answering anything that past decisions, facts or preferences may bear on. Rows carry a snippet, not the full content: call get_memory for a row you need in full. Without q it lists the newest memories (then page with cursor).',
        input: searchInput,
        output: listOutput,
        annotations: READ_ONLY,
        run: (a: SearchInput, _p: TokenPrincipal, ns: string) =>
          this.list(ns, a, { q: a.q, page: a.page, after: a.cursor, mode: a.mode, query_date: a.query_date, min_score: a.min_score, explain: a.explain }),
      },
      {
        name: 'list_recent',
        scope: 'memory:read',
        title: 'List recent memories',
        description: 'The newest memories first, optionally filtered (e.g. by project or tag); page through older ones with cursor. Use it to see what was saved lately.',
        input: listRecentInput,
        output: listOutput,
        annotations: READ_ONLY,
        run: (a: ListRecentInput, _p: TokenPrincipal, ns: string) => this.list(ns, a, { after: a.cursor }),
      },
      {
        name: 'get_memory',
        scope: 'memory:read',
        title: 'Get a memory',
        description: 'One memory with its full markdown content, by id.',
        input: getInput,
        output: memoryOutput,
        annotations: READ_ONLY,
        run: async (a: { id: string }, _p: TokenPrincipal, ns: string) => ({ memory: mapMemory(await this.memories.get(ns, a.id)) }),
      },
      {
        name: 'create_memory',
        scope: 'memory:write',
        title: 'Save a memory',
        description:
          'Saves one durable piece of knowledge (a decision, fact, preference, recurring task) as a short self-contained markdown memory with a clear title and a few tags. Search first: if a memory on the same subject exists, use update_memory instead of saving a second one. Never save secrets.',
        input: createInput,
        output: createOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
        run: async (a: CreateInput, p: TokenPrincipal, ns: string) => {
          const doc = await this.memories.create(ns, await this.dto(CreateMemoryDto, a), { author: principalAuthor(p) });
          // No duplicate hints without memory:read: they name stored memories (decision 0050).
          const similar = canRead(p) ? await this.memories.similarTo(doc) : [];
          const hint = updateHint(similar);
          return { memory: mapMemory(doc), similar, ...(hint ? { hint } : {}) };
        },
      },
      {
        name: 'update_memory',
        scope: 'memory:write',
        title: 'Update a memory',
        description: 'Changes a memory that became outdated or incomplete. Send only the fields that change; the others stay as they are.',
        input: updateInput,
        output: writtenOutput,
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
        // Without memory:read the answer carries no stored field the call did not set (decision 0050).
        run: async ({ id, ...patch }: UpdateInput, p: TokenPrincipal, ns: string) => ({
          memory: mapWritten(await this.memories.update(ns, id, await this.dto(UpdateMemoryDto, patch), { author: principalAuthor(p) }), canRead(p), sentFields(patch)),
        }),
      },
      {
        name: 'delete_memory',
        scope: 'memory:delete',
        title: 'Delete a memory',
        description: 'Deletes a memory for good. Only for a memory that is wrong or that the user asked to forget; update an outdated one instead.',
        input: deleteInput,
        output: deleteOutput,
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
        // Audited as DELETE /api/memories/{id} is (memory.delete: success, or failure with the status and message).
        run: async (a: { id: string }, p: TokenPrincipal, ns: string) => {
          const actor = { kind: 'token' as const, id: p.tokenId, name: p.name ?? null };
          const target = typeof a.id === 'string' ? a.id : null;
          try {
            await this.memories.delete(ns, a.id);
          } catch (e) {
            const { status, body } = toErrorResponse(e, undefined);
            await this.audit.record('memory.delete', { actor, target, outcome: 'failure', detail: { status, error: body.error, via: 'mcp' } });
            throw e;
          }
          await this.audit.record('memory.delete', { actor, target, detail: { via: 'mcp' } });
          return { deleted: true, id: a.id };
        },
      },
      {
        name: 'memory_stats',
        scope: 'memory:read',
        title: 'Memory statistics',
        description: 'How many memories there are, by type, scope, project and agent. Useful to learn which project and agent names exist before filtering.',
        input: statsInput,
        output: statsOutput,
        annotations: READ_ONLY,
        run: async (_a: unknown, _p: TokenPrincipal, ns: string) => ({ stats: mapStats(await this.memories.stats(ns)) }),
      },
      {
        name: 'recall_context',
        scope: 'memory:read',
        title: 'Recall context for a task',
        description:
          'Call it at the start of a task: give the task in a sentence and get the most relevant memories in full, de-duplicated and trimmed to a token budget, each with its id. One call primes your context; use search_memories to dig further.',
        input: recallInput,
        output: recallOutput,
        annotations: READ_ONLY,
        run: (a: RecallInput, _p: TokenPrincipal, ns: string) => this.recall(ns, a),
      },
    ];
  }

  /** Registers every tool on a per-request server; tools/list shows only those the token's scopes allow. */
  register(server: McpServer, principal: TokenPrincipal, headerNamespace?: string): void {
    for (const spec of this.specs) {
      server.registerTool(spec.name, { title: spec.title, description: spec.description, inputSchema: spec.input, outputSchema: spec.output, annotations: spec.annotations }, (args: unknown) =>
        this.call(spec, args, principal, headerNamespace),
      );
    }
    // The SDK lists every registered tool; a tool outside the token's scopes stays callable (and answers
    // with an isError sentence naming the missing scope) but is not offered to the model.
    const allowed = this.specs.filter((s) => principal.scopes.includes(s.scope));
    server.server.setRequestHandler('tools/list', () => ({ tools: allowed.map((s) => this.listedTool(s)) }));
  }

  private async call(spec: ToolSpec, args: unknown, principal: TokenPrincipal, headerNamespace?: string): Promise<CallToolResult> {
    if (!principal.scopes.includes(spec.scope)) {
      return toolError(`This API token lacks the ${spec.scope} scope, so ${spec.name} is not available to it. Ask the administrator for a token with ${spec.scope}.`);
    }
    try {
      // The namespace (issue 43): the argument, else the header, resolved against the token's binding; never passed on as a field.
      const { namespace, ...rest } = (args ?? {}) as { namespace?: string };
      const ns = resolveNamespace(principal.namespaces, namespace ?? headerNamespace);
      const out = await spec.run(rest as never, principal, ns);
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    } catch (e) {
      return toolError(this.explain(e, spec, args));
    }
  }

  /** A sentence for the model: what went wrong and what to do about it. */
  private explain(e: unknown, spec: ToolSpec, args: unknown): string {
    if (e instanceof RequestValidationError) {
      const issues = e.detail.map((d) => {
        const field = d.loc
          .slice(1)
          .map((p) => DTO_NAMES[String(p)] ?? p)
          .join('.');
        return field ? `${field}: ${d.msg}` : d.msg;
      });
      return `Invalid arguments for ${spec.name}: ${issues.join('; ')}.`;
    }
    if (e instanceof MemoryNotFoundError || e instanceof NotFoundError) {
      const id = (args as { id?: unknown })?.id;
      return `No memory has the id ${JSON.stringify(id ?? '')}. It may have been deleted; use search_memories or list_recent to find the right id.`;
    }
    if (e instanceof BackendUnavailableError) return `${e.message}. This is not caused by your arguments; try again later.`;
    if (e instanceof AppError) return e.message;
    this.logger.error(`Tool ${spec.name} failed: ${(e as Error)?.message}`, (e as Error)?.stack);
    return `${spec.name} failed with an internal error. This is not caused by your arguments; try again later.`;
  }

  private listedTool(spec: ToolSpec): Tool {
    let tool = this.listed.get(spec.name);
    if (!tool) {
      tool = {
        name: spec.name,
        title: spec.title,
        description: spec.description,
        inputSchema: jsonSchema(spec.input, 'input') as Tool['inputSchema'],
        outputSchema: jsonSchema(spec.output, 'output'),
        annotations: spec.annotations,
      };
      this.listed.set(spec.name, tool);
    }
    return tool;
  }

  /** Runs arguments through a REST DTO's validation (same rules, same messages). */
  private async dto<T>(metatype: new () => T, value: object): Promise<T> {
    return (await this.pipe.transform(value, { type: 'body', metatype })) as T;
  }

  private async listQuery(a: ListRecentInput & ListExtra): Promise<ListMemoriesQueryDto> {
    const query = {
      q: a.q,
      type: a.type,
      scope: a.scope,
      project: a.project,
      agent: a.agent,
      tag: a.tags,
      days: a.days,
      since: a.since,
      limit: a.limit ?? DEFAULT_LIMIT,
      page: a.page,
      after: a.after,
      mode: a.mode,
      include_superseded: a.include_superseded,
      as_of: a.as_of,
      query_date: a.query_date,
      min_score: a.min_score,
      explain: a.explain,
    };
    return (await this.pipe.transform(withoutUndefined(query), { type: 'query', metatype: ListMemoriesQueryDto })) as ListMemoriesQueryDto;
  }

  private async list(ns: string, filters: ListRecentInput, extra: ListExtra): Promise<Record<string, unknown>> {
    const { ok: _ok, ...page } = await this.memories.list(ns, await this.listQuery({ ...filters, ...extra }));
    return page;
  }

  private async recall(ns: string, a: RecallInput): Promise<RecallOutput> {
    const budget = a.token_budget ?? DEFAULT_TOKEN_BUDGET;
    if (budget < RECALL_BUDGET.min || budget > RECALL_BUDGET.max) {
      throw RequestValidationError.one(['body', 'token_budget'], `Input should be between ${RECALL_BUDGET.min} and ${RECALL_BUDGET.max}`, 'value_error', budget);
    }
    const q = taskQuery(a.task, MAX_QUERY_CHARS);
    if (q === '') throw RequestValidationError.one(['body', 'task'], 'Describe the task in words', 'value_error', a.task);
    const { task: _task, token_budget: _budget, ...filters } = a;
    const hits = await this.memories.list(ns, await this.listQuery({ ...filters, q, limit: RECALL_CANDIDATES }));
    const load = async (id: string): Promise<MemoryDto | null> => {
      try {
        return mapMemory(await this.memories.get(ns, id));
      } catch (e) {
        if (e instanceof NotFoundError) return null; // deleted since the search
        throw e;
      }
    };
    const picked = await selectForBudget(
      hits.rows.map((r) => r.id),
      load,
      budget,
    );
    const notes: string[] = [];
    if (hits.total === 0) notes.push(noMatchNote(hits.best_below_floor));
    if (picked.duplicates > 0) notes.push(`${picked.duplicates} near-duplicate memories were left out.`);
    const leftOut = Math.max(0, hits.total - picked.memories.length - picked.duplicates);
    if (leftOut > 0) notes.push(`${leftOut} less relevant matches did not fit the budget; use search_memories to see them.`);
    return {
      task: a.task,
      token_budget: budget,
      tokens_used: picked.tokensUsed,
      memories: picked.memories,
      matched: hits.total,
      left_out: leftOut,
      note: notes.join(' ') || 'Every matching memory is included.',
    };
  }
}

function toolError(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The JSON Schema the SDK itself would list for a schema (StandardJSONSchemaV1, as in its tools/list). */
function jsonSchema(schema: StandardSchemaWithJSON, io: 'input' | 'output'): Record<string, unknown> {
  const converted = schema['~standard'].jsonSchema[io]({ target: 'draft-2020-12' });
  return { type: 'object', ...converted };
}
