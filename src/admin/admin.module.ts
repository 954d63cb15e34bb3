import { Module } from '@nestjs/common';

// NOTE(skeleton): filled in by its owner.
@Module({})
export class AdminModule {}
