import { JsonLogger, requestLogContext } from './json-logger';

describe('JsonLogger', () => {
  const capture = (levels: Parameters<typeof JsonLogger.prototype.setLogLevels>[0]) => {
    const lines: string[] = [];
    return { logger: new JsonLogger(levels, (l) => lines.push(l)), lines, objects: () => lines.map((l) => JSON.parse(l)) };
  };

  it('writes one JSON object per line with time, level, message and context', () => {
    const { logger, lines, objects } = capture(['log', 'warn', 'error']);
    logger.log('multi\nline message', 'Backends');
    logger.warn('careful');
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    expect(objects()[0]).toEqual({ time: expect.any(String), level: 'info', message: 'multi\nline message', context: 'Backends' });
    expect(objects()[1]).toEqual({ time: expect.any(String), level: 'warn', message: 'careful' });
  });

  it('keeps an error stack as a field, merges object messages, and drops disabled levels', () => {
    const { logger, objects } = capture(['error']);
    logger.log('not written');
    logger.error('it broke', 'Error: it broke\n    at somewhere (file.ts:1:1)', 'Memories');
    logger.error({ message: 'GET /x 500', status: 500 }, 'http');
    expect(objects()).toEqual([
      { time: expect.any(String), level: 'error', message: 'it broke', context: 'Memories', stack: 'Error: it broke\n    at somewhere (file.ts:1:1)' },
      { time: expect.any(String), level: 'error', message: 'GET /x 500', status: 500, context: 'http' },
    ]);
  });

  it('adds the request id of the request being served', () => {
    const { logger, objects } = capture(['log']);
    requestLogContext.run({ request_id: 'abc-123' }, () => logger.log('inside'));
    logger.log('outside');
    expect(objects()[0].request_id).toBe('abc-123');
    expect(objects()[1].request_id).toBeUndefined();
  });
});
