import { isISO8601, registerDecorator, ValidationOptions } from 'class-validator';

/**
 * An ISO 8601 date or date-time that exists (2026-02-31 is refused), any year from 0000 to 9999.
 * class-validator's `IsISO8601({ strict: true })` alone refuses every real date before the year
 * 1000: validator.js checks the calendar date with `new Date("86-01-09")` (the year unpadded), which
 * is another date or none. Those years are checked here with the padded year instead.
 */
export function isRealDateTime(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  if (isISO8601(value, { strict: true })) return true;
  const m = /^(0\d{3})-(\d{2})-(\d{2})(?:[T ]|$)/.exec(value);
  if (!m || !isISO8601(value) || Number.isNaN(Date.parse(value))) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

/** Property decorator for isRealDateTime; reported like IsISO8601 (`datetime_parsing`). */
export function IsRealDateTime(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isISO8601',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: ({ property }) => `${property} must be a valid ISO 8601 date string`, ...options },
      validator: { validate: isRealDateTime },
    });
}
