import { Global, Module } from '@nestjs/common';
import { delegateTo } from '../backends/delegate';
import { EmbeddingProvider } from './embedding-provider.port';
import { EmbeddingsService } from './embeddings.service';

/** The embedding provider port (bound to the provider in effect) and the embedding worker. */
@Global()
@Module({
  providers: [EmbeddingsService, { provide: EmbeddingProvider, useFactory: (s: EmbeddingsService) => delegateTo(() => s.provider), inject: [EmbeddingsService] }],
  exports: [EmbeddingsService, EmbeddingProvider],
})
export class EmbeddingsModule {}
