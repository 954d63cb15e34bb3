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

/** objstore_presign_ttl: an integer or a numeric string, 1..604800; "" = back to the default. */
export function PresignTtlValue(): PropertyDecorator {
  const isBlank = (v: unknown) => typeof v === 'string' && v.trim() === '';
  return applyDecorators(
    IsOptional(),
    ValidateBy(
      {
        name: 'presignTtlInt',
        validator: {
          validate: (v: unknown) => isBlank(v) || !Number.isNaN(parsePresignTtl(v)),
          defaultMessage: () => 'Input should be a valid integer (seconds), given as a number or a numeric string',
        },
      },
      { context: { type: 'int_parsing' } },
    ),
    ValidateBy(
      {
        name: 'presignTtlMin',
        validator: {
          validate: (v: unknown) => isBlank(v) || Number.isNaN(parsePresignTtl(v)) || parsePresignTtl(v) >= PRESIGN_TTL_MIN,
          defaultMessage: () => `Input should be greater than or equal to ${PRESIGN_TTL_MIN}`,
        },
      },
      { context: { type: 'greater_than_equal', ctx: { ge: PRESIGN_TTL_MIN } } },
    ),
    ValidateBy(
      {
        name: 'presignTtlMax',
        validator: {
          validate: (v: unknown) => isBlank(v) || Number.isNaN(parsePresignTtl(v)) || parsePresignTtl(v) <= PRESIGN_TTL_MAX,
          defaultMessage: () => `Input should be less than or equal to ${PRESIGN_TTL_MAX}`,
        },
      },
      { context: { type: 'less_than_equal', ctx: { le: PRESIGN_TTL_MAX } } },
    ),
  );
}

/** memory_history_keep: an integer or a numeric string, 1..1000; "" = back to the default (20). */
export function HistoryKeepValue(): PropertyDecorator {
  const isBlank = (v: unknown) => typeof v === 'string' && v.trim() === '';
  const n = (v: unknown) => parsePresignTtl(v);
  return applyDecorators(
    IsOptional(),
    ValidateBy(
      {
        name: 'historyKeepInt',
        validator: { validate: (v: unknown) => isBlank(v) || !Number.isNaN(n(v)), defaultMessage: () => 'Input should be a valid integer (versions), given as a number or a numeric string' },
      },
      { context: { type: 'int_parsing' } },
    ),
    ValidateBy(
      {
        name: 'historyKeepRange',
        validator: {
          validate: (v: unknown) => isBlank(v) || Number.isNaN(n(v)) || (n(v) >= HISTORY_KEEP_MIN && n(v) <= HISTORY_KEEP_MAX),
          defaultMessage: () => `Input should be from ${HISTORY_KEEP_MIN} to ${HISTORY_KEEP_MAX}`,
        },
      },
      { context: { type: 'value_error', ctx: { ge: HISTORY_KEEP_MIN, le: HISTORY_KEEP_MAX } } },
    ),
  );
}
