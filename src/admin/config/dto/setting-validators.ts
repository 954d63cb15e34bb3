import { applyDecorators } from '@nestjs/common';
import { IsOptional, IsString, ValidateBy } from 'class-validator';
import type { SettingKey } from '../../../config/app-config';
import { checkSetting, HISTORY_KEEP_MAX, HISTORY_KEEP_MIN, parsePresignTtl, PRESIGN_TTL_MAX, PRESIGN_TTL_MIN } from '../../../config/setting-rules';

/**
 * An optional setting: null/absent = unchanged, "" = cleared, otherwise a string obeying the
 * key's rule (setting-rules.ts). Wrong JSON type → 422 string_type; bad value → value_error.
 */
export function SettingValue(key: SettingKey): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsString({ message: 'Input should be a valid string', context: { type: 'string_type' } }),
    ValidateBy(
      {
        name: 'settingRule',
        validator: {
          validate: (v: unknown) => typeof v !== 'string' || v.trim() === '' || checkSetting(key, v.trim()) === null,
          defaultMessage: (args) => `${key} ${checkSetting(key, String(args?.value ?? '').trim()) ?? 'is invalid'}`,
        },
      },
      { context: { type: 'value_error' } },
    ),
  );
}

/**
 * A whole-number setting given as a number or a numeric string, within [min, max]; "" = back to
 * the default. `name` prefixes the validator names; `unit` goes into the int_parsing message.
 */
function BoundedIntSetting(name: string, unit: string, min: number, max: number): PropertyDecorator {
  const isBlank = (v: unknown) => typeof v === 'string' && v.trim() === '';
  const n = (v: unknown) => parsePresignTtl(v);
  return applyDecorators(
    IsOptional(),
    ValidateBy(
      {
        name: `${name}Int`,
        validator: {
          validate: (v: unknown) => isBlank(v) || !Number.isNaN(n(v)),
          defaultMessage: () => `Input should be a valid integer (${unit}), given as a number or a numeric string`,
        },
      },
      { context: { type: 'int_parsing' } },
    ),
    ValidateBy(
      {
        name: `${name}Min`,
        validator: {
          validate: (v: unknown) => isBlank(v) || Number.isNaN(n(v)) || n(v) >= min,
          defaultMessage: () => `Input should be greater than or equal to ${min}`,
        },
      },
      { context: { type: 'greater_than_equal', ctx: { ge: min } } },
    ),
    ValidateBy(
      {
        name: `${name}Max`,
        validator: {
          validate: (v: unknown) => isBlank(v) || Number.isNaN(n(v)) || n(v) <= max,
          defaultMessage: () => `Input should be less than or equal to ${max}`,
        },
      },
      { context: { type: 'less_than_equal', ctx: { le: max } } },
    ),
  );
}

/** objstore_presign_ttl: an integer or a numeric string, 1..604800; "" = back to the default. */
export function PresignTtlValue(): PropertyDecorator {
  return BoundedIntSetting('presignTtl', 'seconds', PRESIGN_TTL_MIN, PRESIGN_TTL_MAX);
}

/** memory_history_keep (issue 9): an integer or a numeric string, 1..1000; "" = back to the default (20). */
export function HistoryKeepValue(): PropertyDecorator {
  return BoundedIntSetting('historyKeep', 'versions', HISTORY_KEEP_MIN, HISTORY_KEEP_MAX);
}
