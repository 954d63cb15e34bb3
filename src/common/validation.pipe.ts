import { ArgumentMetadata, Injectable, PipeTransform, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, type ValidationError } from 'class-validator';
import { RequestValidationError, ValidationIssue } from './errors';
import { wellFormed } from './text';

/** pydantic v2 error type for each class-validator constraint (CONTRACT §1). */
const TYPE_BY_CONSTRAINT: Record<string, string> = {
  isString: 'string_type',
  isInt: 'int_parsing',
  isNumber: 'float_parsing',
  isBoolean: 'bool_parsing',
  isArray: 'list_type',
  isIn: 'enum',
  isEnum: 'enum',
  min: 'greater_than_equal',
  max: 'less_than_equal',
  maxLength: 'string_too_long',
  minLength: 'string_too_short',
  arrayMaxSize: 'too_long',
  isISO8601: 'datetime_parsing',
  isDateString: 'datetime_parsing',
  isDefined: 'missing',
  isObject: 'model_attributes_type',
};

type Root = 'body' | 'query' | 'path';

/**
 * Nest's ValidationPipe configured for one source of values: whitelist, stop at a property's first
 * error, defaults of the DTO exposed, and errors in the CONTRACT §1 422 shape with `loc` starting
 * at the source.
 */
class SourceValidationPipe extends ValidationPipe {
  constructor(root: Root) {
    super({
      transform: true,
      transformOptions: { exposeDefaultValues: true },
      whitelist: true,
      forbidUnknownValues: false,
      stopAtFirstError: true,
      validationError: { target: false, value: true },
      exceptionFactory: (errors: ValidationError[]) => new RequestValidationError(flatten(errors, [root])),
    });
  }
}

/**
 * The application's validation pipe: DTO classes are checked by class-validator (through Nest's
 * ValidationPipe, one configured instance per source: body, query, path), failures answered in the
 * CONTRACT §1 422 shape. Composite decorators pick the exact pydantic type through
 * ValidationOptions.context: `{ context: { type: 'int_parsing', ctx: { ge: 1 } } }`.
 *
 * Before that, only the properties the DTO declares are passed on: an unknown body field is ignored
 * (CONTRACT §1), as `whitelist` would do afterwards, but without class-transformer and
 * class-validator walking it first, and a list over its size limit is refused before they walk it
 * (a 2 MiB body of unknown keys or of 10,000 ids cost them a tenth to a quarter of a second of the
 * event loop; test/e2e/hostile-input.spec.ts, "event loop stays free"). An unknown query parameter is refused (a typo
 * such as `limt=5` would otherwise be silently ignored; /openapi.json lists all there are). Also
 * said in one clear 422 each: a body that is not a JSON object, a scalar query parameter given more
 * than once. Query and path text is normalised as the JSON body parser normalises body text (lone
 * surrogates → U+FFFD).
 */
@Injectable()
export class AppValidationPipe implements PipeTransform {
  private readonly pipes = { body: new SourceValidationPipe('body'), query: new SourceValidationPipe('query'), path: new SourceValidationPipe('path') };

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype, type } = metadata;
    const root: Root | undefined = type === 'body' ? 'body' : type === 'query' ? 'query' : type === 'param' ? 'path' : undefined;
    if (!root || !metatype || isPrimitiveType(metatype)) return value;
    if (root === 'body' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw RequestValidationError.one(['body'], 'Input should be a JSON object', 'model_attributes_type', value ?? null);
    }
    let input = value;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const declared = declaredProperties(metatype);
      if (root === 'query') {
        const extra = Object.keys(value).find((k) => !declared.has(k));
        if (extra !== undefined) {
          throw RequestValidationError.one([root, extra], `Unknown query parameter '${extra}'`, 'extra_forbidden', (value as Record<string, unknown>)[extra]);
        }
      }
      input = pick(value as Record<string, unknown>, declared, root);
      if (root !== 'body') input = fromUrl(input as Record<string, unknown>, metatype, root);
    }
    return this.pipes[root].transform(input, metadata);
  }
}

/** A declared property's @ArrayMaxSize, checked before class-transformer walks the list. */
interface MaxItems {
  max: number;
  message: string;
  type: string;
  ctx: Record<string, unknown>;
}

const declaredCache = new WeakMap<object, Map<string, MaxItems | null>>();

/**
 * The properties a DTO class has validation rules for (those `whitelist` keeps), each with its
 * @ArrayMaxSize if it has one. Read from class-validator's metadata storage, as Nest's
 * ValidationPipe reads it.
 */
function declaredProperties(metatype: abstract new (...args: never[]) => unknown): Map<string, MaxItems | null> {
  let declared = declaredCache.get(metatype);
  if (!declared) {
    declared = new Map();
    for (const m of getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false)) {
      if (!declared.has(m.propertyName)) declared.set(m.propertyName, null);
      if (m.name === 'arrayMaxSize' && !m.each) {
        const context = (m.context ?? {}) as { type?: string; ctx?: Record<string, unknown> };
        const max = Number(m.constraints[0]);
        const message = typeof m.message === 'string' ? m.message : `List should have at most ${max} items`;
        declared.set(m.propertyName, { max, message, type: context.type ?? 'too_long', ctx: context.ctx ?? { max_length: max } });
      }
    }
    declaredCache.set(metatype, declared);
  }
  return declared;
}

/**
 * The declared keys of a plain object (linear in the declared properties; `__proto__` and
 * `constructor` are never declared). A list over its @ArrayMaxSize fails here, as class-validator
 * would say, before class-transformer copies it (10,000 items cost it a quarter of a second).
 */
function pick(value: Record<string, unknown>, declared: Map<string, MaxItems | null>, root: Root): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, maxItems] of declared) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    const v = value[key];
    if (maxItems && Array.isArray(v) && v.length > maxItems.max) {
      throw new RequestValidationError([{ loc: [root, key], msg: maxItems.message, type: maxItems.type, input: echo(v), ctx: maxItems.ctx }]);
    }
    out[key] = v;
  }
  return out;
}

function isPrimitiveType(t: unknown): boolean {
  return t === String || t === Boolean || t === Number || t === Array || t === Object;
}

/**
 * Query or path parameters as the DTO gets them: text normalised, and a scalar property given more
 * than once refused (`?limit=1&limit=2` arrives as a list; its design type says it is not one).
 */
function fromUrl(value: Record<string, unknown>, metatype: abstract new (...args: never[]) => unknown, root: Root): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (Array.isArray(v) && isScalarProperty(metatype, key)) {
      throw RequestValidationError.one([root, key], `Parameter '${key}' was given more than once; give it at most once`, 'value_error', v);
    }
    out[key] = Array.isArray(v) ? v.map(wellFormed) : wellFormed(v);
  }
  return out;
}

function isScalarProperty(metatype: abstract new (...args: never[]) => unknown, key: string): boolean {
  const design = Reflect.getMetadata('design:type', metatype.prototype as object, key) as unknown;
  return design !== undefined && design !== Array;
}

export function flatten(errors: ValidationError[], prefix: (string | number)[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const err of errors) {
    const key = /^\d+$/.test(err.property) ? Number(err.property) : err.property;
    const loc = [...prefix, key];
    if (err.constraints) {
      const [name, message] = Object.entries(err.constraints)[0];
      const context = (err.contexts?.[name] ?? {}) as { type?: string; ctx?: Record<string, unknown> };
      let errType = context.type ?? TYPE_BY_CONSTRAINT[name] ?? 'value_error';
      let msg = message;
      // A required value that was not sent at all.
      if (err.value === undefined && name !== 'isDefined' && errType !== 'missing' && name in TYPE_BY_CONSTRAINT) errType = 'missing';
      if (errType === 'missing') msg = 'Field required';
      out.push({ loc, msg, type: errType, input: echo(err.value), ctx: context.ctx ?? {} });
    }
    if (err.children && err.children.length > 0) out.push(...flatten(err.children, loc));
  }
  return out;
}

/** The offending input as the 422 echoes it: null instead of anything big (never megabytes back). */
function echo(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'string') return value.length > 1024 ? null : value;
  if (Array.isArray(value)) return value.length > 100 ? null : value;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 100 ? null : value;
  return value;
}
