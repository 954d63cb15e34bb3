import { PickType } from '@nestjs/swagger';
import { ListMemoriesQueryDto } from '../../memories/dto/list-memories-query.dto';

/** Filters of GET /api/export: the same as the list's (same names, same validation). */
export class ExportQueryDto extends PickType(ListMemoriesQueryDto, ['type', 'scope', 'agent', 'project', 'tag', 'days', 'since'] as const) {}
