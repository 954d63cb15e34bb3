import type { MemoryLimits } from '../config/app-config';
import { RequestValidationError, ValidationIssue } from '../common/errors';

/**
 * Field rules of CONTRACT §3 that depend on configurable limits (the DTOs check the types).
 * Every function returns the normalised value or records a 422 issue with its body location.
 */
export class InputChecker {
  readonly issues: ValidationIssue[] = [];

  constructor(private readonly limits: MemoryLimits) {}

  content(value: string): string {
    if (value.trim().length === 0) {
      this.issues.push({ loc: ['body', 'content'], msg: 'Content must not be empty or only whitespace', type: 'value_error', input: value, ctx: {} });
    } else if (Buffer.byteLength(value, 'utf8') > this.limits.contentMaxBytes) {
      this.issues.push({
        loc: ['body', 'content'],
        msg: `Content should have at most ${this.limits.contentMaxBytes} bytes (UTF-8)`,
        type: 'string_too_long',
        input: null, // never echo a megabyte back
        ctx: { max_length: this.limits.contentMaxBytes },
      });
    }
    return value;
  }

  /** title / agent / project: trimmed; "" (or only spaces) means none. */
  text(field: 'title' | 'agent' | 'project', value: string): string | null {
    const max = field === 'title' ? this.limits.titleMaxChars : this.limits.nameMaxChars;
    const v = value.trim();
    // The raw value is measured, as the OpenAPI maxLength a client validates against measures it.
    if ([...value].length > max) {
      this.issues.push({ loc: ['body', field], msg: `String should have at most ${max} characters`, type: 'string_too_long', input: value, ctx: { max_length: max } });
    }
    return v === '' ? null : v;
  }

  /** Tags trimmed; empty and duplicate tags dropped, order kept. */
  tags(values: string[]): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    values.forEach((raw, i) => {
      const t = raw.trim();
      if (t === '' || seen.has(t)) return;
      if ([...raw].length > this.limits.tagMaxChars) {
        this.issues.push({
          loc: ['body', 'tags', i],
          msg: `String should have at most ${this.limits.tagMaxChars} characters`,
          type: 'string_too_long',
          input: raw,
          ctx: { max_length: this.limits.tagMaxChars },
        });
        return;
      }
      seen.add(t);
      out.push(t);
    });
    if (out.length > this.limits.maxTags) {
      this.issues.push({
        loc: ['body', 'tags'],
        msg: `List should have at most ${this.limits.maxTags} items after validation, not ${out.length}`,
        type: 'too_long',
        input: null,
        ctx: { field_type: 'List', max_length: this.limits.maxTags, actual_length: out.length },
      });
    }
    return out;
  }

  throwIfAny(): void {
    if (this.issues.length > 0) throw new RequestValidationError(this.issues);
  }
}
