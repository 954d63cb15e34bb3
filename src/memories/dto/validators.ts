import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, Max, Min } from 'class-validator';

/**
 * Composite validators for query strings (values arrive as strings; no implicit conversion).
 * Each states the pydantic error type the 422 reports (CONTRACT §1).
 */

/** An integer query parameter with bounds; "abc", "1.5" or a repeated parameter → int_parsing. */
export function QueryInt(opts: { min?: number; max?: number }) {
  const decorators = [
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\s*[+-]?\d{1,15}\s*$/.test(value) ? Number(value) : value)),
    IsInt({ message: 'Input should be a valid integer, unable to parse string as an integer', context: { type: 'int_parsing', ctx: {} } }),
  ];
  if (opts.min !== undefined) {
    decorators.push(Min(opts.min, { message: `Input should be greater than or equal to ${opts.min}`, context: { type: 'greater_than_equal', ctx: { ge: opts.min } } }));
  }
  if (opts.max !== undefined) {
    decorators.push(Max(opts.max, { message: `Input should be less than or equal to ${opts.max}`, context: { type: 'less_than_equal', ctx: { le: opts.max } } }));
  }
  return applyDecorators(...decorators);
}

/** A decimal query parameter within [min, max]; "abc", "NaN" or a repeated parameter → float_parsing. */
export function QueryNumber(opts: { min: number; max: number }) {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\s*[+-]?(\d{1,15}(\.\d{0,15})?|\.\d{1,15})\s*$/.test(value) ? Number(value) : value)),
    IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'Input should be a valid number, unable to parse string as a number', context: { type: 'float_parsing', ctx: {} } }),
    Min(opts.min, { message: `Input should be greater than or equal to ${opts.min}`, context: { type: 'greater_than_equal', ctx: { ge: opts.min } } }),
    Max(opts.max, { message: `Input should be less than or equal to ${opts.max}`, context: { type: 'less_than_equal', ctx: { le: opts.max } } }),
  );
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** A boolean query parameter: true/false/1/0/yes/no/on/off; anything else → bool_parsing. */
export function QueryBool() {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => {
      if (typeof value !== 'string') return value;
      const v = value.trim().toLowerCase();
      return TRUE.has(v) ? true : FALSE.has(v) ? false : value;
    }),
    IsBoolean({ message: 'Input should be a valid boolean, unable to interpret input', context: { type: 'bool_parsing', ctx: {} } }),
  );
}

/** One of an enumeration → enum with the expected values. */
export function OneOf(values: readonly string[]) {
  const expected = values.map((v) => `'${v}'`).join(', ');
  return IsIn([...values], { message: `Input should be ${expected}`, context: { type: 'enum', ctx: { expected } } });
}
