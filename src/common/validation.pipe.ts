import { ArgumentMetadata, Injectable, PipeTransform, ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
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

/** class-validator's constraint for a property the DTO does not declare (forbidNonWhitelisted). */
const UNKNOWN_PROPERTY = 'whitelistValidation';

type Root = 'body' | 'query' | 'path';

/**
 * Nest's ValidationPipe configured for one source of values: whitelist, stop at a property's first
 * error, defaults of the DTO exposed, and errors in the CONTRACT §1 422 shape with `loc` starting
 * at the source. A query parameter the route does not know is refused (a typo such as `limt=5`
 * would otherwise be silently ignored; /openapi.json lists all there are); an unknown body field
 * is ignored (CONTRACT §1).
 */
class SourceValidationPipe extends ValidationPipe {
  constructor(root: Root) {
    super({
      transform: true,
      transformOptions: { exposeDefaultValues: true },
      whitelist: true,
      forbidNonWhitelisted: root === 'query',
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
 * CONTRACT §1 422 shape. Before that, two things class-validator does not say well: a body that is
 * not a JSON object, and a scalar query parameter given more than once (each is one clear 422);
 * query and path text is normalised as the JSON body parser normalises body text (lone surrogates →
 * U+FFFD). Composite decorators pick the exact pydantic type through ValidationOptions.context:
 * `{ context: { type: 'int_parsing', ctx: { ge: 1 } } }`.
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
    const input = root !== 'body' && value !== null && typeof value === 'object' ? fromUrl(value as Record<string, unknown>, metatype, root) : value;
    return this.pipes[root].transform(input, metadata);
  }
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
      if (name === UNKNOWN_PROPERTY) {
        out.push({ loc, msg: `Unknown query parameter '${err.property}'`, type: 'extra_forbidden', input: echo(err.value), ctx: {} });
        continue;
      }
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
