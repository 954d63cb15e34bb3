import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsArray, IsOptional, IsString } from 'class-validator';
import { MEMORY_SCOPES, MEMORY_TYPES, type MemoryScope, type MemoryType } from '../../backends/ports/memory.model';
import { OneOf } from './validators';

/** At least one character that String.prototype.trim() keeps (the same set, spelled out for every regex dialect). */
export const NOT_ONLY_WHITESPACE = '[^\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]';

const STRING = { message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } };
const LIST = { message: 'Input should be a valid list', context: { type: 'list_type', ctx: {} } };

/** `supersedes` of a create or PATCH: at most 20 ids of stored memories (checked by the service, decision 0130). */
export function SupersedesField(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: 'array',
      items: { type: 'string', pattern: '^[0-9a-f]{24}$' },
      nullable: true,
      maxItems: 20,
      example: [],
      description: 'At most 20 ids of stored memories (not this one); an id that does not exist is refused (422) and nothing is written',
    }),
    IsOptional(),
    IsArray(LIST),
    IsString({ each: true, ...STRING }),
  );
}

/** Body of POST /api/memories. Limits (CONTRACT §3): content 1 byte to 1 MiB and not only whitespace, title ≤ 300, agent/project ≤ 200, ≤ 50 tags of ≤ 64 characters. */
export class CreateMemoryDto {
  /** Markdown body: 1 byte to 1 MiB of UTF-8, not only whitespace. */
  @ApiProperty({ example: 'Deploys go through the blue-green pipeline; never deploy on Fridays.', minLength: 1, maxLength: 1048576, pattern: NOT_ONLY_WHITESPACE })
  @IsString(STRING)
  content: string;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'Deployment policy', maxLength: 300 })
  @IsOptional()
  @IsString(STRING)
  title?: string | null;

  @ApiPropertyOptional({ enum: MEMORY_TYPES, default: 'note', nullable: true })
  @IsOptional()
  @OneOf(MEMORY_TYPES)
  type?: MemoryType | null;

  @ApiPropertyOptional({ enum: MEMORY_SCOPES, default: 'global', nullable: true })
  @IsOptional()
  @OneOf(MEMORY_SCOPES)
  scope?: MemoryScope | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'release-bot', maxLength: 200 })
  @IsOptional()
  @IsString(STRING)
  agent?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'payments', maxLength: 200 })
  @IsOptional()
  @IsString(STRING)
  project?: string | null;

  /** Trimmed; empty and duplicate tags are dropped, order kept. */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', maxLength: 64 },
    nullable: true,
    example: ['deploy', 'policy'],
    description: 'At most 50 after dropping empty and duplicate tags; each at most 64 characters after trimming',
  })
  @IsOptional()
  @IsArray(LIST)
  @IsString({ each: true, ...STRING })
  tags?: string[] | null;

  /** Ids of older memories this one replaces (decision 0130): they get superseded_by and valid_to and drop out of searches and lists. */
  @SupersedesField()
  supersedes?: string[] | null;
}
