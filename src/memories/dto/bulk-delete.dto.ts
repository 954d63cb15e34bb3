import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsString } from 'class-validator';

// class-validator checks the decorator nearest the property first: the list check must come first.
export class BulkDeleteDto {
  /** Memory ids to delete (at most 1000). Unknown ids are reported in `missing`. */
  @ApiPropertyOptional({ type: [String], maxItems: 1000, default: [], example: ['6740a1b2c3d4e5f601234567'], description: 'Absent: nothing is deleted' })
  @ArrayMaxSize(1000, { message: 'List should have at most 1000 items', context: { type: 'too_long', ctx: { max_length: 1000 } } })
  @IsString({ each: true, message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } })
  @IsArray({ message: 'Input should be a valid list', context: { type: 'list_type', ctx: {} } })
  ids: string[] = [];
}
