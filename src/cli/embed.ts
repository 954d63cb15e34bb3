import { EmbeddingsService } from '../embeddings/embeddings.service';
import { withApp } from './context';
import { Command, EXIT, parseOptions, Progress } from './io';

export const embedCommand: Command = {
  name: 'embed',
  summary: 'Compute every missing embedding now, with progress',
  usage: `memstore embed

Compute every missing embedding now (after a reindex or a change of model), with a progress bar,
then exit. A running server does the same in the background. Exit code 1 when search is
keyword-only (no model) or jobs keep failing.`,
  async run(args, env, io) {
    parseOptions(args, {});
    return withApp(
      env,
      async (app) => {
        const embeddings = app.get(EmbeddingsService);
        let s = await embeddings.status();
        if (s.state === 'keyword-only') {
          io.err(`Search is keyword-only: ${s.reason ?? 'no embedding model'}`);
          return EXIT.failed;
        }
        io.out(`Embedding with ${s.provider} (${s.model}, ${s.dimensions ?? '?'} dimensions): ${s.pending} waiting`);
        const total = (s.pending ?? 0) + (s.embedded ?? 0);
        const progress = new Progress(io, 'embedded');
        let stalled = 0;
        while ((s.pending ?? 0) > 0 && stalled < 3) {
          const worked = await embeddings.drainOnce();
          s = await embeddings.status();
          stalled = worked === 0 ? stalled + 1 : 0;
          progress.update(s.embedded ?? 0, total);
        }
        progress.finish();
        io.out(`embedded: ${s.embedded}, waiting: ${s.pending}${s.failing ? `, failing: ${s.failing} (${s.last_error})` : ''}`);
        return (s.pending ?? 0) === 0 ? EXIT.ok : EXIT.failed;
      },
      { command: 'embed', io, existing: true },
    );
  },
};
