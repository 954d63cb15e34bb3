import { ApiProperty } from '@nestjs/swagger';

export class ImportItemDto {
  @ApiProperty({ example: 'memories/6740c0ffee0000000000abcd.md' })
  file: string;
  @ApiProperty({ enum: ['created', 'updated', 'skipped', 'invalid'] })
  status: string;
  @ApiProperty({ type: String, nullable: true })
  id: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'front matter is not valid YAML: …' })
  reason: string | null;
}

export class ImportReportDto {
  @ApiProperty({ example: true })
  ok: boolean;
  dry_run: boolean;
  @ApiProperty({ enum: ['skip', 'overwrite', 'new_id'] })
  on_conflict: string;
  @ApiProperty({ enum: ['zip', 'jsonl', 'markdown'] })
  format: string;
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  invalid: number;
  /** Earlier versions restored into memories' history (an export's `history/<id>/<n>.md`); these files are not counted in `created`. */
  versions: number;
  /** One entry per file, at most 1000 (the progress stream has every one). */
  @ApiProperty({ type: [ImportItemDto] })
  items: ImportItemDto[];
  items_omitted: number;
}
