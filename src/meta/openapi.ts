import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

// NOTE(skeleton): the meta helper finishes this (offline /docs and /redoc, examples).
export function setupOpenApi(app: NestExpressApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Memory Store API')
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'mem_tok_<id>_<secret>' }, 'bearer')
    .addCookieAuth('memstore.sid', { type: 'apiKey', in: 'cookie', name: 'memstore.sid' }, 'session')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json' });
}
