import { Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { BackendsService } from '../backends/backends.service';
import type { MemoryIndex } from '../backends/ports/memory-index.port';
import type { EmbeddingJob } from '../backends/ports/memory.model';
import type { AppConfig } from '../config/app-config';
import type { SettingsService } from '../config/settings.service';
import { EmbeddingsService, HINTS_PER_SECOND } from './embeddings.service';

/** Writes first: duplicate hints within their budget, and a queue that waits for a burst of writes to pause (unit: stub provider and queue). */
describe('EmbeddingsService under a burst of writes', () => {
  const vector = Float32Array.from([1, 0, 0]);
  let svc: EmbeddingsService;
  let claims: number;
  let queue: EmbeddingJob[];

  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-23T12:00:00Z') });
    claims = 0;
    queue = [];
    const settings = { current: () => ({ embedding_provider: 'openai', embedding_url: 'http://127.0.0.1:9/v1', embedding_model: 'stub' }), changes: new Subject() };
    const memories = {
      useVectorSpace: async () => false,
      claimEmbeddingJobs: async () => {
        claims++;
        return queue.splice(0);
      },
      storeVector: async () => undefined,
      failEmbeddingJob: async () => undefined,
    };
    const index = { similar: async () => [] };
    svc = new EmbeddingsService(
      settings as unknown as SettingsService,
      { duplicateHints: true, embeddingWorker: true } as AppConfig,
      { docdb: { memories } } as unknown as BackendsService,
      index as unknown as MemoryIndex,
    );
    svc.onModuleInit();
    jest.spyOn(svc.provider, 'embed').mockResolvedValue(vector);
  });
  afterEach(async () => {
    const done = svc.onApplicationShutdown();
    await jest.runOnlyPendingTimersAsync();
    await done;
    jest.useRealTimers();
  });

  it(`computes duplicate hints for at most ${HINTS_PER_SECOND} creates a second, then skips them until the budget refills`, async () => {
    const embed = svc.provider.embed as jest.Mock;
    for (let i = 0; i < HINTS_PER_SECOND + 10; i++) await svc.similar(null, `note ${i}`, {}, 'x');
    expect(embed).toHaveBeenCalledTimes(HINTS_PER_SECOND);
    expect(svc.hintsSkipped).toBe(10);

    jest.setSystemTime(Date.now() + 500); // half a second refills half the budget
    for (let i = 0; i < HINTS_PER_SECOND; i++) await svc.similar(null, `later ${i}`, {}, 'x');
    expect(embed).toHaveBeenCalledTimes(HINTS_PER_SECOND + HINTS_PER_SECOND / 2);
    expect(svc.hintsSkipped).toBe(10 + HINTS_PER_SECOND / 2);
  });

  it('the queue waits while writes stream in, embeds once they pause, and waits at most 30 s into a burst', async () => {
    await jest.advanceTimersByTimeAsync(1_500); // the worker's first idle rounds
    const idle = claims;
    // Writes every 100 ms for 2 s: the worker does not take a job meanwhile.
    for (let i = 0; i < 20; i++) {
      svc.written();
      await jest.advanceTimersByTimeAsync(100);
    }
    expect(claims).toBe(idle);
    // A pause of 250 ms: it takes the jobs.
    await jest.advanceTimersByTimeAsync(300);
    expect(claims).toBeGreaterThan(idle);

    // A burst that does not pause: after 30 s the worker embeds alongside the writes.
    const before = claims;
    for (let t = 0; t < 29_000; t += 100) {
      svc.written();
      await jest.advanceTimersByTimeAsync(100);
    }
    expect(claims).toBe(before);
    for (let t = 0; t < 2_000; t += 100) {
      svc.written();
      await jest.advanceTimersByTimeAsync(100);
    }
    expect(claims).toBeGreaterThan(before);
  });
});
