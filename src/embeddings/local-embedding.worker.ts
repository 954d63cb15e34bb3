/**
 * One of the local model's threads (see LocalEmbeddingProvider): loads the tokenizer and the ONNX
 * session once, then answers `{ id, text }` with `{ id, vector }` (or `{ id, error }`), one at a
 * time. Tokenising and pooling run here, off the service's main thread.
 */
import * as fs from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { headForTokens } from './local-embedding.text';

interface Job {
  id: number;
  text: string;
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) return;
  const { onnx, tokenizer: tokenizerFile, maxTokens, pooling } = workerData as { onnx: string; tokenizer: string; maxTokens: number; pooling: 'cls' | 'mean' };
  let run: (text: string) => Promise<Float32Array>;
  try {
    const ort = await import('onnxruntime-node');
    // onnxruntime's own logger writes coloured plain-text warnings straight to the process's stderr
    // (e.g. its telemetry start-up warnings in a container), which breaks JSON log lines: only its
    // errors are printed (the environment's level, read once at the first session; the session's too).
    ort.env.logLevel = 'error';
    const { Tokenizer } = (await import('@huggingface/tokenizers')) as unknown as { Tokenizer: new (json: object, cfg: object) => { encode(t: string): { ids: number[] } } };
    const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerFile, 'utf8')) as object, {});
    // One intra-op thread per session: two threads of one session wait on each other and were
    // slower than one on a loaded 2-core machine; the provider runs a second session instead.
    const session = await ort.InferenceSession.create(onnx, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', logSeverityLevel: 3 });
    const withTypes = session.inputNames.includes('token_type_ids');
    const encode = (text: string): number[] => {
      // A memory may be 1 MB: tokenise a head that surely holds more than maxTokens tokens, and
      // the whole text only when that head turns out to be too short (the same ids either way).
      const head = headForTokens(text, maxTokens);
      if (head.length < text.length) {
        const ids = tokenizer.encode(head).ids;
        if (ids.length > maxTokens) return ids;
      }
      return tokenizer.encode(text).ids;
    };
    run = async (text) => {
      let ids = encode(text);
      // The tokenizer ignores tokenizer.json's truncation: keep the first tokens and the final [SEP].
      if (ids.length > maxTokens) ids = [...ids.slice(0, maxTokens - 1), ids[ids.length - 1]];
      const n = ids.length;
      const feeds: Record<string, import('onnxruntime-node').Tensor> = {
        input_ids: new ort.Tensor(
          'int64',
          BigInt64Array.from(ids, (x) => BigInt(x)),
          [1, n],
        ),
        attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
      };
      if (withTypes) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(n), [1, n]);
      const out = await session.run(feeds);
      const hidden = (out.last_hidden_state ?? out[session.outputNames[0]]).data as Float32Array;
      const d = hidden.length / n;
      const v = new Float32Array(d);
      if (pooling === 'cls') v.set(hidden.subarray(0, d));
      else {
        for (let t = 0; t < n; t++) for (let i = 0; i < d; i++) v[i] += hidden[t * d + i];
        for (let i = 0; i < d; i++) v[i] /= n;
      }
      let sum = 0;
      for (let i = 0; i < d; i++) sum += v[i] * v[i];
      const norm = Math.sqrt(sum);
      if (norm > 0) for (let i = 0; i < d; i++) v[i] /= norm;
      return v;
    };
    // The session's first run allocates its buffers (~0.1–0.3 s here): done now, so that `ready`
    // means a thread that answers at its usual speed, not a search that waits for that.
    await run('warm up');
  } catch (e) {
    port.postMessage({ failed: (e as Error).message });
    return;
  }
  port.on('message', (msg: Job | { close: true }) => {
    if ('close' in msg) {
      port.close();
      return;
    }
    run(msg.text).then(
      (vector) => port.postMessage({ id: msg.id, vector }, [vector.buffer as ArrayBuffer]),
      (e: Error) => port.postMessage({ id: msg.id, error: e.message }),
    );
  });
  port.postMessage({ ready: true });
}

void main();
