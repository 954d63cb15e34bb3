import { ObjectStore } from '../ports/object-store.port';

// NOTE(skeleton): placeholder; implemented by its owner.
// @ts-expect-error abstract members are not implemented yet
export class FilesystemObjectStore extends ObjectStore {
  readonly kind = 'filesystem';
  constructor(
    readonly root: string,
    private readonly key: Buffer,
  ) {
    super();
  }

  override async close(): Promise<void> {}
}
