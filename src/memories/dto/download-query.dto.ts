import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { QueryBool } from './validators';

export class DownloadQueryDto {
  /** false: the markdown file; true: a time-limited URL that works without a token. */
  @ApiPropertyOptional({ type: Boolean, default: false })
  @IsOptional()
  @QueryBool()
  url: boolean = false;
}
