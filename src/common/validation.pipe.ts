import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate, ValidationError } from 'class-validator';
import { RequestValidationError, ValidationIssue } from './errors';

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
    const instance = plainToInstance(metatype, value ?? {}, { exposeDefaultValues: true });
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
      out.push({ loc, msg, type: errType, input: err.value ?? null, ctx: context.ctx ?? {} });
    }
    if (err.children && err.children.length > 0) out.push(...flatten(err.children, loc));
  }
  return out;
}

function isRequiredConstraint(name: string): boolean {
  return name in TYPE_BY_CONSTRAINT;
}
