import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString } from 'class-validator';

export const TEST_TARGETS = ['all', 'docdb', 'objstore', 'mongodb', 's3', 'r2'] as const;
export type TestTarget = (typeof TEST_TARGETS)[number];

/** POST /api/test body. */
export class TestBackendsDto {
  @ApiPropertyOptional({ enum: TEST_TARGETS, nullable: true, default: 'all', example: 'all', description: 'Which backend to test: all, docdb (alias mongodb) or objstore (aliases s3, r2).' })
  @IsOptional()
  @IsIn(TEST_TARGETS, {
    message: `Input should be ${TEST_TARGETS.map((t) => `'${t}'`).join(', ')}`,
    context: { type: 'enum', ctx: { expected: TEST_TARGETS.map((t) => `'${t}'`).join(', ') } },
  })
  @IsString({ message: 'Input should be a valid string', context: { type: 'string_type' } }) // runs first
  target?: TestTarget = 'all';
}
