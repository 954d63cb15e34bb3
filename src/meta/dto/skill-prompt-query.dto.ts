import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';

export const PROMPT_FORMATS = ['json', 'text', 'markdown'] as const;
export type PromptFormat = (typeof PROMPT_FORMATS)[number];
export const DEFAULT_TOKEN_ENV = 'MEMORY_API_TOKEN';

const STRING = { message: 'Input should be a valid string', context: { type: 'string_type' } };
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const ENV_NAME_RULE = {
  message: 'Input should be an environment variable name (letters, digits and underscores, not starting with a digit, at most 128 characters)',
  context: { type: 'value_error', ctx: { pattern: ENV_NAME.source } },
};

/** Query of GET /api/skill-prompt. */
export class SkillPromptQueryDto {
  @ApiPropertyOptional({ enum: PROMPT_FORMATS, default: 'json', description: 'json: a JSON envelope; text or markdown: the prompt itself as text/markdown.' })
  @IsOptional()
  @IsIn(PROMPT_FORMATS, { message: "Input should be 'json', 'text' or 'markdown'", context: { type: 'enum', ctx: { expected: "'json', 'text' or 'markdown'" } } })
  @IsString(STRING) // bottom decorator runs first: a repeated parameter (an array) is a string_type error
  format?: PromptFormat = 'json';

  @ApiPropertyOptional({
    default: DEFAULT_TOKEN_ENV,
    example: 'MEMORY_API_TOKEN',
    pattern: ENV_NAME.source,
    description: 'Name of the environment variable the prompt tells the model to read the token from.',
  })
  @IsOptional()
  @Matches(ENV_NAME, ENV_NAME_RULE)
  @IsString(STRING)
  token_env?: string;

  @ApiPropertyOptional({ example: 'MEMORY_API_TOKEN', pattern: ENV_NAME.source, description: 'Alias of token_env (token_env wins when both are given).' })
  @IsOptional()
  @Matches(ENV_NAME, ENV_NAME_RULE)
  @IsString(STRING)
  token_placeholder?: string;
}
