import { Module } from '@nestjs/common';
import { MemoriesModule } from '../memories/memories.module';
import { MetaModule } from '../meta/meta.module';
import { McpContent } from './mcp-content';
import { McpController } from './mcp.controller';
import { McpServerFactory } from './mcp-server.factory';
import { McpTools } from './mcp-tools';

/**
 * The remote MCP endpoint (POST /mcp). Its body parser and Origin check are plain Express
 * middleware installed by configureApp (they must run before the global JSON parser).
 */
@Module({
  imports: [MemoriesModule, MetaModule],
  controllers: [McpController],
  providers: [McpTools, McpContent, McpServerFactory],
})
export class McpModule {}
