import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../common/auth/decorators';
import { AppError, NotFoundError } from '../../common/errors';
import { WebAssetsService } from './web-assets.service';

/**
 * The admin page. `GET /` serves the Vite-built index (never cached, so a new build is picked
 * up at once); `GET /admin-assets/<hashed name>` serves its scripts and styles, cached for a
 * year as immutable (the name changes with the content). Both are public: the page itself
 * holds no data, every call it makes goes through the guarded API.
 */
@ApiTags('Admin page')
@Controller()
export class WebController {
  constructor(private readonly assets: WebAssetsService) {}

  @Public()
  @Get()
  @ApiOperation({ summary: 'The admin web page (HTML)' })
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'The admin page', content: { 'text/html': { schema: { type: 'string' } } } })
  async index(@Res() res: Response): Promise<void> {
    const html = await this.assets.indexHtml();
    if (html === null) throw new AppError(503, 'The admin page is not built: run `npm run build`');
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(html);
  }

  @Public()
  @Get('admin-assets/:file')
  @ApiExcludeEndpoint()
  asset(@Param('file') file: string, @Res() res: Response): Promise<void> {
    const name = this.assets.assetName(file);
    if (!name) throw new NotFoundError();
    return new Promise((resolve, reject) => {
      res.sendFile(name, { root: this.assets.assetsDir, dotfiles: 'deny', maxAge: 365 * 24 * 3600 * 1000, immutable: true, lastModified: false }, (err) => {
        if (!err) return resolve();
        if (res.headersSent) return resolve();
        reject(new NotFoundError());
      });
    });
  }
}
