import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsArray, IsOptional, IsString } from 'class-validator';
import { MEMORY_SCOPES, MEMORY_TYPES, type MemoryScope, type MemoryType } from '../../backends/ports/memory.model';
import { NOT_ONLY_WHITESPACE, SupersedesField } from './create-memory.dto';
import { OneOf } from './validators';

const STRING = { message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } };
const LIST = { message: 'Input should be a valid list', context: { type: 'list_type', ctx: {} } };

/**
 * Body of PATCH /api/memories/{memory_id}. A field that is absent or null is left as it is;
 * "" clears title, agent and project; [] clears tags; content cannot be emptied.
 */
export class UpdateMemoryDto {
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    minLength: 1,
    maxLength: 1048576,
    pattern: NOT_ONLY_WHITESPACE,
    description: 'Cannot be emptied: 1 byte to 1 MiB of UTF-8, not only whitespace',
  })
  @IsOptional()
  @IsString(STRING)
  content?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 300, description: '"" clears the title' })
  @IsOptional()
  @IsString(STRING)
  title?: string | null;

  @ApiPropertyOptional({ enum: MEMORY_TYPES, nullable: true })
  @IsOptional()
  @OneOf(MEMORY_TYPES)
  type?: MemoryType | null;

  @ApiPropertyOptional({ enum: MEMORY_SCOPES, nullable: true })
  @IsOptional()
  @OneOf(MEMORY_SCOPES)
  scope?: MemoryScope | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 200, description: '"" clears the agent' })
  @IsOptional()
  @IsString(STRING)
  agent?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 200, description: '"" clears the project' })
  @IsOptional()
  @IsString(STRING)
  project?: string | null;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', maxLength: 64 },
    nullable: true,
    description: '[] clears the tags; each at most 64 characters (surrounding spaces count, then are trimmed)',
  })
  @IsOptional()
  @IsArray(LIST)
  @IsString({ each: true, ...STRING })
  tags?: string[] | null;

  /** Ids of older memories this one replaces (decision 0130): they get superseded_by and valid_to and drop out of searches and lists. */
  @SupersedesField()
  supersedes?: string[] | null;
}
