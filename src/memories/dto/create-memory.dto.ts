import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsArray, IsOptional, IsString } from 'class-validator';
import { MEMORY_SCOPES, MEMORY_TYPES, type MemoryScope, type MemoryType } from '../../backends/ports/memory.model';
import { OneOf } from './validators';

const STRING = { message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } };
const LIST = { message: 'Input should be a valid list', context: { type: 'list_type', ctx: {} } };

/** Body of POST /api/memories. Limits (CONTRACT §3): content 1 byte to 1 MiB and not only whitespace, title ≤ 300, agent/project ≤ 200, ≤ 50 tags of ≤ 64 characters. */
export class CreateMemoryDto {
  /** Markdown body. */
  @ApiProperty({ example: 'Deploys go through the blue-green pipeline; never deploy on Fridays.' })
  @IsString(STRING)
  content: string;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'Deployment policy', maxLength: 300 })
  @IsOptional()
  @IsString(STRING)
  title?: string | null;

  @ApiPropertyOptional({ enum: MEMORY_TYPES, default: 'note' })
  @IsOptional()
  @OneOf(MEMORY_TYPES)
  type?: MemoryType | null;

  @ApiPropertyOptional({ enum: MEMORY_SCOPES, default: 'global' })
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
  @ApiPropertyOptional({ type: [String], nullable: true, example: ['deploy', 'policy'] })
  @IsOptional()
  @IsArray(LIST)
  @IsString({ each: true, ...STRING })
  tags?: string[] | null;
}
