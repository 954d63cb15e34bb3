import { PayloadTooLargeError, RequestValidationError } from './errors';
import { checkJsonShape, parseJsonBody } from './json-body';

describe('checkJsonShape (one pass before JSON.parse)', () => {
  const limits = { maxDepth: 3, maxKeys: 2, maxNodes: 5 };

  it('accepts what is within every limit', () => {
    expect(() => checkJsonShape('{"a":[1,{"b":2}]}', limits)).not.toThrow();
    expect(() => checkJsonShape('[[[]]]', limits)).not.toThrow();
  });

  it('counts nesting, keys per object and values', () => {
    expect(() => checkJsonShape('[[[[]]]]', limits)).toThrow(PayloadTooLargeError);
    expect(() => checkJsonShape('{"a":1,"b":2,"c":3}', limits)).toThrow(/too many keys in one object: at most 2/);
    expect(() => checkJsonShape('{"a":{"x":1,"y":2},"b":{"x":1,"y":2}}', { ...limits, maxNodes: 10 })).not.toThrow(); // keys are per object
    expect(() => checkJsonShape('[1,2,3,4,5,6]', limits)).toThrow(/too many values: at most 5/);
  });

  it('ignores brackets, colons and commas inside strings, escaped quotes included', () => {
    expect(() => checkJsonShape('{"a":"[[[[{{{{:::,,,,\\"[[[["}', limits)).not.toThrow();
    expect(() => checkJsonShape('{"a\\\\":"[[[["}', limits)).not.toThrow(); // an escaped backslash ends before the quote
    expect(() => checkJsonShape('{"a\\\\":[[[["x"]]]]}', limits)).toThrow(/nested too deeply/);
  });

  it('never does more than linear work on pathological strings', () => {
    // CPU time of this thread, not wall time (issue 46 item 11): quadratic work on 1 MB would be minutes.
    const threadCpu = (prev?: NodeJS.CpuUsage): NodeJS.CpuUsage => (process as { threadCpuUsage?: (p?: NodeJS.CpuUsage) => NodeJS.CpuUsage }).threadCpuUsage?.(prev) ?? process.cpuUsage(prev);
    const cpu0 = threadCpu();
    checkJsonShape(`{"a":"${'\\"'.repeat(500_000)}"}`);
    checkJsonShape(`{"a":"${'\\\\'.repeat(500_000)}"}`);
    const cpu = threadCpu(cpu0);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(1000);
  });
});

describe('parseJsonBody', () => {
  it('replaces lone surrogate escapes (in values and keys) with U+FFFD and keeps proper pairs', () => {
    const v = parseJsonBody(Buffer.from('{"t":"a\\ud800b","k\\udc00":["\\ud83d\\ude00","\\udbff"]}')) as Record<string, unknown>;
    expect(v).toEqual({ t: 'a\uFFFDb', 'k\uFFFD': ['\u{1F600}', '\uFFFD'] });
  });

  it('keeps a "__proto__" key as an own property when it rewrites strings', () => {
    const v = parseJsonBody(Buffer.from('{"__proto__":{"x":"\\ud800"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(v, '__proto__')).toBe(true);
  });

  it('decodes invalid UTF-8 with replacement characters and reports malformed JSON as json_invalid', () => {
    expect(parseJsonBody(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]))).toBe('\uFFFD\uFFFD\uFFFD');
    expect(() => parseJsonBody(Buffer.from('{"a":'))).toThrow(RequestValidationError);
  });
});
