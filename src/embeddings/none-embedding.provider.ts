import { EmbeddingKind, EmbeddingProvider, EmbeddingUnavailableError } from './embedding-provider.port';

/** No embeddings: search is keyword-only. `reason` says why (chosen, or no model installed). */
export class NoneEmbeddingProvider extends EmbeddingProvider {
  readonly provider = 'none' as const;
  readonly model = null;
  readonly dimensions = null;

  constructor(readonly unavailable: string = 'embedding provider set to none') {
    super();
  }

  override async embed(_text?: string, _kind?: EmbeddingKind): Promise<Float32Array> {
    throw new EmbeddingUnavailableError(`Semantic search is off: ${this.unavailable}`);
  }
}
