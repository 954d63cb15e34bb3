import { isRealDateTime } from './iso-date';

describe('isRealDateTime', () => {
  it.each(['2026-11-23', '2026-11-23T10:00:00Z', '2024-02-29T23:59:59.999+01:00', '0086-01-09T23:01:38-13:35', '0004-02-29', '0000-01-01T00:00:00Z', '0999-12-31T23:59:59Z'])(
    '%s is a real date-time',
    (v) => expect(isRealDateTime(v)).toBe(true),
  );

  it.each(['2026-02-31', '2025-02-29', '2026-13-01', '0086-02-30T10:00:00Z', '0100-02-29', '0086-13-01', 'yesterday', '', '0086-01-09T25:00:00Z', 86])('%s is refused', (v) =>
    expect(isRealDateTime(v)).toBe(false),
  );
});
