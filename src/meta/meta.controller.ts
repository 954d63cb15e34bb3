import { Controller, Get, Header, Query, Req, Res, StreamableFile } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiProduces, ApiTags, ApiUnprocessableEntityResponse, getSchemaPath } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../common/auth/decorators';
import { baseUrl } from '../common/base-url';
import { AppConfig } from '../config/app-config';
import { GuideResponseDto, HealthResponseDto, SkillPromptResponseDto } from './dto/meta-responses.dto';
import { DEFAULT_TOKEN_ENV, SkillPromptQueryDto } from './dto/skill-prompt-query.dto';
import { GuideQueryDto } from './dto/guide-query.dto';
import { GUIDE_VERSION, MetaService } from './meta.service';

/** Public meta endpoints (CONTRACT §6). None of them touches a backend. */
@ApiTags('meta')
@Controller('api')
export class MetaController {
  constructor(
    private readonly meta: MetaService,
    private readonly cfg: AppConfig,
  ) {}

  @Get('health')
  @Public()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Liveness probe', description: 'Answers without touching the backends.' })
  @ApiOkResponse({ type: HealthResponseDto })
  health(): HealthResponseDto {
    return { ok: true, status: 'ok' };
  }

  @Get('guide')
  @Public()
  @ApiOperation({
    summary: 'The API guide (markdown)',
    description:
      'Every endpoint, authentication and scopes, errors, pagination, search syntax, limits and curl examples. A JSON envelope by default; the markdown itself with format=markdown or `Accept: text/markdown`.',
  })
  @ApiProduces('application/json', 'text/markdown')
  @ApiExtraModels(GuideResponseDto)
  @ApiOkResponse({
    description: 'The guide (JSON envelope or markdown)',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(GuideResponseDto) } },
      'text/markdown': { schema: { type: 'string', example: '# Memory Store API guide (version 1)\n...' } },
    },
  })
  @ApiUnprocessableEntityResponse({ description: 'Unknown format' })
  guide(@Query() query: GuideQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): GuideResponseDto | string {
    const guide = this.meta.guide(baseUrl(this.cfg, req));
    res.vary('Accept');
    const markdown = query.format ? query.format === 'markdown' : req.accepts(['application/json', 'text/markdown']) === 'text/markdown';
    if (markdown) {
      res.type('text/markdown; charset=utf-8');
      return guide;
    }
    return { ok: true, version: GUIDE_VERSION, guide };
  }

  @Get('skill-prompt')
  @Public()
  @ApiOperation({
    summary: 'A prompt that teaches a model to use this service',
    description: 'format=json (default): a JSON envelope; format=text or markdown: the prompt as text/markdown. token_env (alias token_placeholder) names the environment variable holding the token.',
  })
  @ApiProduces('application/json', 'text/markdown')
  @ApiExtraModels(SkillPromptResponseDto)
  @ApiOkResponse({
    description: 'The prompt (JSON envelope or markdown)',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(SkillPromptResponseDto) } },
      'text/markdown': { schema: { type: 'string', example: '# Memory Store\n\nYou have a long-term memory...' } },
    },
  })
  @ApiUnprocessableEntityResponse({ description: 'Unknown format, or a token_env that is not an environment variable name' })
  skillPrompt(@Query() query: SkillPromptQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): SkillPromptResponseDto | string {
    const tokenEnv = query.token_env ?? query.token_placeholder ?? DEFAULT_TOKEN_ENV;
    const base = baseUrl(this.cfg, req);
    const prompt = this.meta.skillPrompt(base, tokenEnv);
    if (query.format === 'text' || query.format === 'markdown') {
      res.type('text/markdown; charset=utf-8');
      return prompt;
    }
    return { ok: true, prompt, base_url: base, token_env: tokenEnv, format: 'markdown' };
  }

  @Get('skill-pack.zip')
  @Public()
  @ApiOperation({ summary: 'Skill pack for agent runtimes', description: 'A zip with memory-store/SKILL.md (YAML front matter: name, description) and memory-store/.env.example.' })
  @ApiProduces('application/zip')
  @ApiOkResponse({ description: 'The zip archive', content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } })
  async skillPack(@Req() req: Request): Promise<StreamableFile> {
    const zip = await this.meta.skillPack(baseUrl(this.cfg, req), DEFAULT_TOKEN_ENV);
    return new StreamableFile(zip, { type: 'application/zip', disposition: 'attachment; filename="memory-store-skill.zip"', length: zip.length });
  }
}
