import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationError } from 'class-validator';
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

const LOC_ROOT: Record<string, string> = { body: 'body', query: 'query', param: 'path', custom: 'body' };

function isPrimitiveType(t: unknown): boolean {
  return t === String || t === Boolean || t === Number || t === Array || t === Object || t === undefined;
}

/**
 * Validates DTO classes with class-validator and reports failures in the CONTRACT §1 422 shape,
 * with `loc` starting at the value's source (body / query / path).
 * Composite decorators can pick the exact pydantic type through ValidationOptions.context:
 * `{ context: { type: 'int_parsing', ctx: { ge: 1 } } }`.
 */
@Injectable()
export class AppValidationPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype, type } = metadata;
    if (!metatype || isPrimitiveType(metatype)) return value;
    const root = LOC_ROOT[type] ?? type;
    if (type === 'body' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw RequestValidationError.one([root], 'Input should be a JSON object', 'model_attributes_type', value ?? null);
    }
    const known = knownProperties(metatype);
    if (type === 'query' && value !== null && typeof value === 'object') {
      // A query parameter the route does not know is refused (a typo such as `limt=5` would
      // otherwise be silently ignored), as /openapi.json says: the parameters listed are all there are.
      const extra = Object.keys(value).find((k) => !known.has(k));
      if (extra !== undefined) {
        throw RequestValidationError.one([root, extra], `Unknown query parameter '${extra}'`, 'extra_forbidden', (value as Record<string, unknown>)[extra]);
      }
    }
    // Only the DTO's own properties reach class-transformer (which is slow on huge objects and
    // recurses into whatever it gets); `whitelist` would drop the rest afterwards anyway.
    const input = value !== null && typeof value === 'object' && !Array.isArray(value) ? pick(value as Record<string, unknown>, known, root, type === 'query' || type === 'param') : value;
    const instance = plainToInstance(metatype, input ?? {}, { exposeDefaultValues: true });
    const errors = await validate(instance as object, {
      whitelist: true,
      forbidNonWhitelisted: false,
      forbidUnknownValues: false,
      stopAtFirstError: true,
    });
    if (errors.length > 0) {
      throw new RequestValidationError(flatten(errors, [root]));
    }
    return instance;
  }
}

interface KnownProperty {
  /** The property is a list (query: may be repeated). */
  isArray: boolean;
  /** Its @ArrayMaxSize, checked before class-transformer walks the list. */
  maxItems?: { max: number; message: string; type: string; ctx: Record<string, unknown> };
}

const knownCache = new WeakMap<object, Map<string, KnownProperty>>();

/** The properties a DTO class validates (what `whitelist` keeps), with their design types. */
export function knownProperties(metatype: new (...args: unknown[]) => unknown): Map<string, KnownProperty> {
  let known = knownCache.get(metatype);
  if (!known) {
    known = new Map();
    for (const m of getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false)) {
      let prop = known.get(m.propertyName);
      if (!prop) {
        const design = Reflect.getMetadata('design:type', metatype.prototype as object, m.propertyName) as unknown;
        prop = { isArray: design === Array };
        known.set(m.propertyName, prop);
      }
      if (m.name === 'arrayMaxSize' && !m.each) {
        const context = (m.context ?? {}) as { type?: string; ctx?: Record<string, unknown> };
        const max = Number(m.constraints[0]);
        const message = typeof m.message === 'string' ? m.message : `List should have at most ${max} items`;
        prop.maxItems = { max, message, type: context.type ?? 'too_long', ctx: context.ctx ?? { max_length: max } };
      }
    }
    knownCache.set(metatype, known);
  }
  return known;
}

/**
 * Copies the known keys of a plain object (linear in its size; unknown keys, `__proto__` and
 * `constructor` included, are left behind). For query strings and path parameters it also
 * normalises text (lone surrogates → U+FFFD, as the JSON body parser does for bodies) and
 * refuses a scalar parameter given more than once.
 */
function pick(value: Record<string, unknown>, known: Map<string, KnownProperty>, root: string, fromUrl: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, prop] of known) {
    if (!Object.prototype.hasOwnProperty.call(value, key)) continue;
    let v = value[key];
    if (prop.maxItems && Array.isArray(v) && v.length > prop.maxItems.max) {
      // A list over its size limit fails as class-validator would say, before anything walks it.
      throw new RequestValidationError([{ loc: [root, key], msg: prop.maxItems.message, type: prop.maxItems.type, input: echo(v), ctx: prop.maxItems.ctx }]);
    }
    if (fromUrl) {
      if (Array.isArray(v) && !prop.isArray) {
        throw RequestValidationError.one([root, key], `Parameter '${key}' was given more than once; give it at most once`, 'value_error', v);
      }
      v = Array.isArray(v) ? v.map(wellFormed) : wellFormed(v);
    }
    out[key] = v;
  }
  return out;
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
      if (err.value === undefined && name !== 'isDefined' && errType !== 'missing') {
        // A required value that was not sent at all.
        if (isRequiredConstraint(name)) {
          errType = 'missing';
          msg = 'Field required';
        }
      }
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

function isRequiredConstraint(name: string): boolean {
  return name in TYPE_BY_CONSTRAINT;
}
