import { Injectable } from '@nestjs/common';
import JSZip from 'jszip';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';

export const GUIDE_VERSION = 1;

/** The markdown texts (src/meta/assets, copied to dist by nest-cli) rendered for a base URL. */
@Injectable()
export class MetaService {
  private readonly guideTemplate = readAsset('guide.md');
  private readonly promptTemplate = readAsset('skill-prompt.md');

  guide(baseUrl: string): string {
    return render(this.guideTemplate, { base_url: baseUrl });
  }

  skillPrompt(baseUrl: string, tokenEnv: string): string {
    return render(this.promptTemplate, { base_url: baseUrl, token_env: tokenEnv });
  }

  /** `memory-store/SKILL.md` (YAML front matter + the prompt) and `memory-store/.env.example`. */
  async skillPack(baseUrl: string, tokenEnv: string): Promise<Buffer> {
    const frontMatter = stringify({
      name: 'memory-store',
      description: `Long-term memory for agents: search, save, update and delete markdown memories in the Memory Store at ${baseUrl} (token in $${tokenEnv}).`,
    });
    const skill = `---\n${frontMatter}---\n\n${this.skillPrompt(baseUrl, tokenEnv)}`;
    const env = `# Memory Store connection for the memory-store skill\nMEMORY_API_BASE_URL=${baseUrl}\n# The same service as a remote MCP server (streamable HTTP, same token as a Bearer header)\nMEMORY_MCP_URL=${baseUrl}/mcp\n${tokenEnv}=\n`;
    const zip = new JSZip();
    const dir = zip.folder('memory-store')!;
    dir.file('SKILL.md', skill);
    dir.file('.env.example', env);
    return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', platform: 'UNIX' });
  }
}

function readAsset(name: string): string {
  return fs.readFileSync(path.join(__dirname, 'assets', name), 'utf8');
}

function render(template: string, vars: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (m, key: string) => vars[key] ?? m);
}
