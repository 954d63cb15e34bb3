import fc from 'fast-check';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationTypes } from 'class-validator';
import '../app.module';
import { acceptedAsValid, AppValidationPipe, compiledRulesOf, VALIDATOR_OPTIONS } from './validation.pipe';

type DtoClass = new (...args: unknown[]) => object;

/** Every class the application registered validation rules for (all DTOs, body, query and path). */
const DTOS = [...(getMetadataStorage() as unknown as { validationMetadatas: Map<DtoClass, unknown> }).validationMetadatas.keys()].filter((c) => typeof c === 'function');

/** The values an IsIn / OneOf rule of the class names, so generated input is often valid. */
function enumValues(cls: DtoClass): unknown[] {
  return getMetadataStorage()
    .getTargetValidationMetadatas(cls, '', false, false)
    .filter((m) => m.type === ValidationTypes.CUSTOM_VALIDATION && m.name === 'isIn')
    .flatMap((m) => m.constraints[0] as unknown[]);
}

function propertiesOf(cls: DtoClass): string[] {
  return [...new Set(getMetadataStorage().getTargetValidationMetadatas(cls, '', false, false).map((m) => m.propertyName))];
}

/** Values of every kind a query string or a JSON body brings, valid and invalid for most rules. */
function valueFor(cls: DtoClass): fc.Arbitrary<unknown> {
  const enums = enumValues(cls);
  const scalar = fc.oneof(
    fc.constantFrom<unknown>('', 'x', ' 7 ', '1', '20', '0', '-3', '1.5', 'abc', 'true', 'off', '2026-11-01', '2026-02-31', '2026-11-01T00:00:00.000Z', '127.0.0.1', '10.0.0.0/8', 'memory:read', 'a'.repeat(1001)),
    fc.integer({ min: -5, max: 40_000 }),
    fc.double({ noNaN: false }),
    fc.boolean(),
    fc.constant(null),
    fc.string({ maxLength: 12 }),
    ...(enums.length > 0 ? [fc.constantFrom(...enums)] : []),
  );
  return fc.oneof(
    { weight: 3, arbitrary: scalar },
    { weight: 1, arbitrary: fc.array(scalar, { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.array(enums.length > 0 ? fc.constantFrom(...enums) : fc.string({ maxLength: 6 }), { maxLength: 60 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('a', 'b'), scalar, { maxKeys: 2, noNullPrototype: true }) },
  );
}

function inputFor(cls: DtoClass): fc.Arbitrary<Record<string, unknown>> {
  const entries = propertiesOf(cls).map((p) => fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: valueFor(cls) }).map((v) => [p, v] as const));
  return fc.tuple(fc.tuple(...entries), fc.option(fc.constantFrom('unknown_key', 'constructor'), { nil: undefined })).map(([pairs, extra]) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of pairs) if (v !== undefined) out[k] = v;
    if (extra) out[extra] = 'x';
    return out;
  });
}

describe('AppValidationPipe: the compiled rules against class-validator', () => {
  it('covers the DTOs of every route, and compiles the query and body DTOs of the hot routes', () => {
    const names = DTOS.map((c) => c.name);
    for (const hot of ['ListMemoriesQueryDto', 'CreateMemoryDto', 'UpdateMemoryDto', 'VersionListQueryDto']) {
      expect(names).toContain(hot);
      expect(compiledRulesOf(DTOS[names.indexOf(hot)])).not.toBeNull();
    }
  });

  it.each(DTOS.map((c) => [c.name, c] as const))('%s: accepted exactly when class-validator finds no error, with the same instance', async (_name, cls) => {
    const outcomes = { accepted: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(inputFor(cls), async (plain) => {
        const fast = plainToInstance(cls, plain, { exposeDefaultValues: true });
        const slow = plainToInstance(cls, plain, { exposeDefaultValues: true });
        const accepted = acceptedAsValid(fast);
        const errors = await validate(slow, VALIDATOR_OPTIONS);
        if (compiledRulesOf(cls) === null) {
          expect(accepted).toBe(false);
          return;
        }
        expect(accepted).toBe(errors.length === 0);
        if (accepted) expect(fast).toEqual(slow);
        outcomes[accepted ? 'accepted' : 'refused']++;
      }),
      { numRuns: 300, seed: 20261126 },
    );
    if (compiledRulesOf(cls) !== null) {
      // Both sides of the check were exercised (an always-refusing check would pass the above).
      expect(outcomes.accepted).toBeGreaterThan(0);
      expect(outcomes.refused).toBeGreaterThan(0);
    }
  });

  it('falls back to class-validator for the errors, so a refused query answers the same 422 as before', async () => {
    const { ListMemoriesQueryDto } = await import('../memories/dto/list-memories-query.dto');
    const pipe = new AppValidationPipe();
    await expect(pipe.transform({ q: 'deploy', limit: '0', mode: 'fuzzy' }, { type: 'query', metatype: ListMemoriesQueryDto })).rejects.toMatchObject({
      detail: [
        { loc: ['query', 'limit'], type: 'greater_than_equal', msg: 'Input should be greater than or equal to 1', input: 0 },
        { loc: ['query', 'mode'], type: 'enum', input: 'fuzzy' },
      ],
    });
    const ok = (await pipe.transform({ q: 'deploy', limit: '5', tag: 'infra' }, { type: 'query', metatype: ListMemoriesQueryDto })) as InstanceType<typeof ListMemoriesQueryDto>;
    expect(ok).toBeInstanceOf(ListMemoriesQueryDto);
    expect({ ...ok }).toEqual({ q: 'deploy', limit: 5, page: 1, tag: ['infra'] });
  });
});
