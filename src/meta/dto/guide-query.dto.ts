import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString } from 'class-validator';

export const GUIDE_FORMATS = ['json', 'markdown'] as const;
export type GuideFormat = (typeof GUIDE_FORMATS)[number];

/** Query of GET /api/guide. */
export class GuideQueryDto {
  @ApiPropertyOptional({
    enum: GUIDE_FORMATS,
    description: 'json: a JSON envelope; markdown: the guide itself as text/markdown. Without it, `Accept: text/markdown` (preferred over application/json) also gives markdown.',
  })
  @IsOptional()
  @IsIn(GUIDE_FORMATS, { message: "Input should be 'json' or 'markdown'", context: { type: 'enum', ctx: { expected: "'json' or 'markdown'" } } })
  @IsString({ message: 'Input should be a valid string', context: { type: 'string_type' } })
  format?: GuideFormat;
}
