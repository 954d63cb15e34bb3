import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { OneOf, QueryBool } from '../../memories/dto/validators';
import { IMPORT_FORMATS, ON_CONFLICT, type ImportFormat, type OnConflict } from '../import.service';

/** Query of POST /api/import (the upload itself is the raw request body). */
export class ImportQueryDto {
  /** What to do with a memory whose id exists with different content: keep it, overwrite it, or import under a new id. */
  @ApiPropertyOptional({ enum: ON_CONFLICT, default: 'skip' })
  @IsOptional()
  @OneOf(ON_CONFLICT)
  on_conflict: OnConflict = 'skip';

  /** Report what would happen without writing anything. */
  @ApiPropertyOptional({ type: Boolean, default: false })
  @IsOptional()
  @QueryBool()
  dry_run: boolean = false;

  /** auto: a zip by its signature, JSONL by a leading `{` or a .jsonl name, else one markdown file. */
  @ApiPropertyOptional({ enum: IMPORT_FORMATS, default: 'auto' })
  @IsOptional()
  @OneOf(IMPORT_FORMATS)
  format: ImportFormat = 'auto';

  /** The uploaded file's name (title of a single markdown note without a heading; names JSONL lines in the report). */
  @ApiPropertyOptional({ example: 'notes.zip', maxLength: 255 })
  @IsOptional()
  @IsString({ message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } })
  @MaxLength(255, { message: 'String should have at most 255 characters', context: { type: 'string_too_long', ctx: { max_length: 255 } } })
  filename?: string;

  /** true: answer with NDJSON, one line per file as it is imported, then the report. */
  @ApiPropertyOptional({ type: Boolean, default: false })
  @IsOptional()
  @QueryBool()
  progress: boolean = false;
}
