import { ApiProperty } from '@nestjs/swagger';

export class HealthResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: 'ok' }) status: string;
}

export class GuideResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: 1, description: 'Version of the guide.' }) version: number;
  @ApiProperty({ example: '# Memory Store API guide (version 1)\n...', description: 'The guide, in markdown.' }) guide: string;
}

export class SkillPromptResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: '# Memory Store\n\nYou have a long-term memory...', description: 'The prompt, in markdown.' }) prompt: string;
  @ApiProperty({ example: 'http://127.0.0.1:8080' }) base_url: string;
  @ApiProperty({ example: 'MEMORY_API_TOKEN' }) token_env: string;
  @ApiProperty({ example: 'markdown', description: 'Format of `prompt`.' }) format: string;
}
