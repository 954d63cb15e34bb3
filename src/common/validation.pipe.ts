import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validate, ValidationError, ValidationTypes, type ValidationArguments, type ValidatorConstraintInterface } from 'class-validator';
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
    const instance = plainToInstance(metatype, input ?? {}, { exposeDefaultValues: true }) as object;
    // Valid input (nearly every request) is checked by the DTO's compiled rules; anything they do
    // not pass goes through class-validator itself, which reports the errors.
    if (acceptedAsValid(instance)) return instance;
    const errors = await validate(instance, VALIDATOR_OPTIONS);
    if (errors.length > 0) {
      throw new RequestValidationError(flatten(errors, [root]));
    }
    return instance;
  }
}

export const VALIDATOR_OPTIONS = { whitelist: true, forbidNonWhitelisted: false, forbidUnknownValues: false, stopAtFirstError: true };

/** One property's rules: its @IsOptional-style conditions, then its constraints in class-validator's order. */
interface PropertyRules {
  name: string;
  conditions: Array<(object: object, value: unknown) => boolean>;
  constraints: Array<{ validator: ValidatorConstraintInterface; each: boolean; constraints: unknown[] }>;
}

/** A DTO class's rules, compiled once; null when it uses a rule the compiled check does not run (nested, async, promise). */
const compiledRules = new WeakMap<object, PropertyRules[] | null>();

/** The compiled rules of a DTO class (null: it is checked by class-validator only). */
export function compiledRulesOf(target: object): PropertyRules[] | null {
  let rules = compiledRules.get(target);
  if (rules === undefined) {
    rules = compileRules(target);
    compiledRules.set(target, rules);
  }
  return rules;
}

function compileRules(target: object): PropertyRules[] | null {
  const storage = getMetadataStorage();
  // The same selection as class-validator's ValidationExecutor for VALIDATOR_OPTIONS (no groups, always = false).
  const grouped = storage.groupByPropertyName(storage.getTargetValidationMetadatas(target as () => void, undefined as unknown as string, false, false, undefined));
  const out: PropertyRules[] = [];
  for (const [name, metas] of Object.entries(grouped)) {
    const rules: PropertyRules = { name, conditions: [], constraints: [] };
    // IS_DEFINED rules run before the others (ValidationExecutor.performValidations).
    const ordered = [...metas.filter((m) => m.type === ValidationTypes.IS_DEFINED), ...metas.filter((m) => m.type === ValidationTypes.CUSTOM_VALIDATION)];
    for (const m of metas) {
      if (m.type === ValidationTypes.CONDITIONAL_VALIDATION) rules.conditions.push(m.constraints[0] as (object: object, value: unknown) => boolean);
      else if (m.type !== ValidationTypes.WHITELIST && m.type !== ValidationTypes.IS_DEFINED && m.type !== ValidationTypes.CUSTOM_VALIDATION) return null;
    }
    for (const m of ordered) {
      for (const c of storage.getTargetValidatorConstraints(m.constraintCls)) {
        if (c.async) return null;
        rules.constraints.push({ validator: c.instance, each: m.each === true, constraints: m.constraints });
      }
    }
    out.push(rules);
  }
  return out;
}

/**
 * Strips the properties without rules (as `whitelist` does), then answers true when class-validator
 * would find no error in `instance` (with VALIDATOR_OPTIONS). False means "ask class-validator":
 * a rule failed, or a validator answered a promise. The check runs the DTO's own validators with
 * the arguments class-validator gives them, without its per-call metadata lookups and error
 * objects (validation.pipe.spec.ts compares the two on generated input).
 */
export function acceptedAsValid(instance: object): boolean {
  const target = instance.constructor;
  const rules = compiledRulesOf(target);
  if (!rules || rules.length === 0) return false;
  const record = instance as Record<string, unknown>;
  for (const key of Object.keys(instance)) {
    if (!rules.some((r) => r.name === key)) delete record[key];
  }
  for (const rule of rules) {
    const value = record[rule.name];
    if (!rule.conditions.every((condition) => condition(instance, value))) continue;
    for (const c of rule.constraints) {
      const args: ValidationArguments = { targetName: target.name, property: rule.name, object: instance, value, constraints: c.constraints };
      const valid =
        c.each && (Array.isArray(value) || value instanceof Set || value instanceof Map)
          ? [...(value instanceof Map ? value.values() : value)].every((item) => c.validator.validate(item, args) === true)
          : c.validator.validate(value, args) === true;
      if (!valid) return false;
    }
  }
  return true;
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
