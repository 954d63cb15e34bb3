import { CreateMemoryDto } from '../memories/dto/create-memory.dto';
import { ListMemoriesQueryDto } from '../memories/dto/list-memories-query.dto';
import { AppValidationPipe } from './validation.pipe';

describe('AppValidationPipe', () => {
  const pipe = new AppValidationPipe();
  const query = (value: Record<string, unknown>) => pipe.transform(value, { type: 'query', metatype: ListMemoriesQueryDto });
  const body = (value: unknown) => pipe.transform(value, { type: 'body', metatype: CreateMemoryDto });

  it('answers a valid query as the DTO, defaults filled in and text converted', async () => {
    const ok = (await query({ q: 'deploy', limit: '5', tag: 'infra' })) as ListMemoriesQueryDto;
    expect(ok).toBeInstanceOf(ListMemoriesQueryDto);
    expect({ ...ok }).toEqual({ q: 'deploy', limit: 5, page: 1, tag: ['infra'] });
  });

  it('reports every broken rule in the contract 422 shape, loc starting at the source', async () => {
    await expect(query({ q: 'deploy', limit: '0', mode: 'fuzzy' })).rejects.toMatchObject({
      status: 422,
      detail: [
        { loc: ['query', 'limit'], type: 'greater_than_equal', msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } },
        { loc: ['query', 'mode'], type: 'enum', input: 'fuzzy' },
      ],
    });
    await expect(body({ title: 'no content' })).rejects.toMatchObject({ detail: [{ loc: ['body', 'content'], type: 'missing', msg: 'Field required', input: null }] });
  });

  it('refuses an unknown query parameter, a repeated scalar one and a body that is not an object; ignores an unknown body field', async () => {
    await expect(query({ q: 'x', limt: '5' })).rejects.toMatchObject({ detail: [{ loc: ['query', 'limt'], type: 'extra_forbidden', msg: "Unknown query parameter 'limt'", input: '5' }] });
    await expect(query({ limit: ['1', '2'] })).rejects.toMatchObject({ detail: [{ loc: ['query', 'limit'], type: 'value_error' }] });
    await expect(query({ tag: ['a', 'b'] })).resolves.toMatchObject({ tag: ['a', 'b'] });
    for (const v of [null, undefined, [], 'text', 7]) {
      await expect(body(v)).rejects.toMatchObject({ detail: [{ loc: ['body'], type: 'model_attributes_type' }] });
    }
    const dto = (await body({ content: 'c', surplus: 1, ['__proto__']: { polluted: true } })) as CreateMemoryDto & Record<string, unknown>;
    expect(dto).toBeInstanceOf(CreateMemoryDto);
    expect(dto.content).toBe('c');
    expect(dto.surplus).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('normalises lone surrogates in query text', async () => {
    expect(((await query({ q: 'a\ud800b' })) as ListMemoriesQueryDto).q).toBe('a\ufffdb');
  });
});
