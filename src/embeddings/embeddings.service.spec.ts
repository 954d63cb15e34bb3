import { Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { BackendsService } from '../backends/backends.service';
import type { EmbeddingQueue } from '../backends/ports/embedding-queue.port';
import type { EmbeddingJob } from '../backends/ports/memory.model';
import type { AppConfig } from '../config/app-config';
import type { SettingsService } from '../config/settings.service';
import { EmbeddingProvider } from './embedding-provider.port';
import { EmbeddingsService } from './embeddings.service';
import { HINT_BURST_MS, HINT_SHARE } from './hint-budget';

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
      { docdb: { embeddings: memories } } as unknown as BackendsService,
      index as unknown as EmbeddingQueue,
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

  /** Creates every `gapMs` for `forMs`, each hint keeping the model busy `costMs`: the hints given and the model time they took. */
  async function burst(costMs: number, gapMs: number, forMs: number): Promise<{ hinted: number; modelMs: number }> {
    const embed = svc.provider.embed as jest.Mock;
    embed.mockImplementation(async () => {
      jest.setSystemTime(Date.now() + costMs); // the model's time
      return vector;
    });
    const calls = embed.mock.calls.length;
    const end = Date.now() + forMs;
    for (let i = 0; Date.now() < end; i++) {
      await svc.similar(null, `note ${costMs} ${gapMs} ${i}`, { namespace: 'default' }, 'x');
      jest.setSystemTime(Date.now() + gapMs);
    }
    const hinted = embed.mock.calls.length - calls;
    return { hinted, modelMs: hinted * costMs };
  }

  it(`hints every create of a quiet service, and in a burst of creates spends at most ${HINT_SHARE * 100} % of the model's time on hints`, async () => {
    // An agent writing a memory every 2 s: every create gets its hints.
    expect(await burst(25, 2_000, 60_000)).toEqual({ hinted: 30, modelMs: 750 });
    expect(svc.hintsSkipped).toBe(0);

    // 200 creates a second for 10 s of 0.7 KB memories (25 ms of model time each): the model
    // spends at most its share of the time (plus what a quiet service had in hand) on hints.
    jest.setSystemTime(Date.now() + 10_000);
    const long = await burst(25, 5, 10_000);
    expect(long.modelMs).toBeLessThanOrEqual(HINT_SHARE * 10_000 * 1.1 + HINT_BURST_MS + 25);
    expect(long.modelMs).toBeGreaterThanOrEqual(HINT_SHARE * 10_000 * 0.9);
    expect(svc.hintsSkipped).toBeGreaterThan(1_000);

    // The same burst of one-line notes (4 ms each) gets about six times as many hints: the cap is time, not calls.
    jest.setSystemTime(Date.now() + 10_000);
    const short = await burst(4, 5, 10_000);
    expect(short.modelMs).toBeLessThanOrEqual(HINT_SHARE * 10_000 * 1.1 + HINT_BURST_MS + 4);
    expect(short.hinted).toBeGreaterThan(long.hinted * 4);
  });

  it("does not count the model's load on first use as a hint's time: the creates after the first are hinted too", async () => {
    let loaded = false;
    const loadOnce = () => {
      if (loaded) return;
      loaded = true;
      jest.setSystemTime(Date.now() + 2_000); // a local model loading on a busy machine
    };
    jest.spyOn(svc.provider, 'load').mockImplementation(async () => loadOnce());
    (svc.provider.embed as jest.Mock).mockImplementation(async () => {
      loadOnce();
      jest.setSystemTime(Date.now() + 25);
      return vector;
    });
    for (let i = 0; i < 5; i++) {
      await svc.similar(null, `note ${i}`, { namespace: 'default' }, 'x');
      jest.setSystemTime(Date.now() + 1_000); // an agent writing a memory a second
    }
    expect(svc.provider.embed).toHaveBeenCalledTimes(5);
    expect(svc.hintsSkipped).toBe(0);
  });

  it('the queue embeds as many jobs at once as the provider computes at once (a local model on two threads: two)', async () => {
    let running = 0;
    let most = 0;
    (svc.provider.embed as jest.Mock).mockImplementation(async () => {
      most = Math.max(most, ++running);
      for (let i = 0; i < 5; i++) await Promise.resolve();
      running--;
      return vector;
    });
    const jobs = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ id: `${tag}${i}`, text: `turn ${tag} ${i}`, gen: 1, attempts: 0 }) satisfies EmbeddingJob);
    queue.push(...jobs(5, 'a'));
    expect(await svc.drainOnce()).toBe(5);
    expect(most).toBe(1);
    expect(svc.provider.embed).toHaveBeenCalledTimes(5);

    jest.spyOn(svc.provider, 'parallelism', 'get').mockReturnValue(2);
    most = 0;
    queue.push(...jobs(5, 'b'));
    expect(await svc.drainOnce()).toBe(5);
    expect(most).toBe(2);
    expect(svc.provider.embed).toHaveBeenCalledTimes(10);
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

/** A serving process loads its model at start and after a change of model, not on its first search (unit: stub provider). */
describe('EmbeddingsService.warmUp', () => {
  const openai = (model: string) => ({ embedding_provider: 'openai', embedding_url: 'http://127.0.0.1:9/v1', embedding_model: model });

  it('loads the current provider at once, and each provider made current after it; without it, none until first use', async () => {
    const load = jest.spyOn(EmbeddingProvider.prototype, 'load');
    const changes = new Subject<ReturnType<typeof openai>>();
    let current = openai('first');
    const settings = { current: () => current, changes };
    const svc = new EmbeddingsService(settings as unknown as SettingsService, { embeddingWorker: false } as AppConfig, {} as BackendsService, {} as EmbeddingQueue);
    try {
      svc.onModuleInit();
      expect(load).not.toHaveBeenCalled(); // tests and the command line: first use loads it
      svc.warmUp();
      expect(load.mock.contexts).toEqual([svc.provider]);
      const first = svc.provider;
      current = openai('second');
      changes.next(current);
      expect(svc.provider).not.toBe(first);
      expect(load.mock.contexts).toEqual([first, svc.provider]);
    } finally {
      load.mockRestore();
      await svc.onApplicationShutdown();
    }
  });
});
