import { RequestValidationError } from '../common/errors';
import { entriesOutside, IpAllowList, normalizeAllowList } from './ip-allow-list';

describe('IpAllowList', () => {
  it('allows everything when empty', () => {
    expect(new IpAllowList([]).allows('203.0.113.9')).toBe(true);
  });

  it('matches IPv4 addresses and CIDR ranges, including IPv4-mapped IPv6 clients', () => {
    const list = new IpAllowList(['127.0.0.0/8', '192.0.2.7']);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.allows('::ffff:127.0.0.1')).toBe(true);
    expect(list.allows('192.0.2.7')).toBe(true);
    expect(list.allows('192.0.2.8')).toBe(false);
    expect(list.allows('10.0.0.1')).toBe(false);
    expect(list.allows('::1')).toBe(false);
  });

  it('matches IPv6 addresses and ranges', () => {
    const list = new IpAllowList(['::1', '2001:db8::/32']);
    expect(list.allows('::1')).toBe(true);
    expect(list.allows('2001:db8:1234::5')).toBe(true);
    expect(list.allows('2001:db9::1')).toBe(false);
    expect(list.allows('127.0.0.1')).toBe(false);
  });

  it('treats an IPv4-mapped entry as its IPv4 address', () => {
    expect(new IpAllowList(['::ffff:10.0.0.0/104']).allows('10.1.2.3')).toBe(true);
    expect(new IpAllowList(['::ffff:10.0.0.5']).allows('::ffff:10.0.0.5')).toBe(true);
  });

  it('refuses unparseable client addresses', () => {
    expect(new IpAllowList(['0.0.0.0/0']).allows('not-an-ip')).toBe(false);
  });
});

describe('normalizeAllowList', () => {
  it('normalizes and de-duplicates', () => {
    expect(normalizeAllowList([' 10.0.0.0/8 ', '10.0.0.0/8', '::FFFF:127.0.0.1', '2001:DB8::/32', '::1/128'])).toEqual(['10.0.0.0/8', '127.0.0.1', '2001:db8::/32', '::1']);
  });

  it('reports every invalid entry with its index', () => {
    let err: RequestValidationError | undefined;
    try {
      normalizeAllowList(['10.0.0.1', 'nope', '10.0.0.0/33', '1.2.3']);
    } catch (e) {
      err = e as RequestValidationError;
    }
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err!.detail.map((d) => d.loc)).toEqual([
      ['body', 'allowed_ips', 1],
      ['body', 'allowed_ips', 2],
      ['body', 'allowed_ips', 3],
    ]);
    expect(err!.detail.every((d) => d.type === 'value_error')).toBe(true);
  });
});

describe('entriesOutside', () => {
  it('names the entries no range of the outer list contains', () => {
    const outer = ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'];
    expect(entriesOutside(outer, ['10.1.0.0/16', '10.2.3.4', '2001:db8:1::/48', '192.0.2.7'])).toEqual([]);
    expect(entriesOutside(outer, ['10.0.0.0/7', '11.0.0.1', '2001:db9::/48', '192.0.2.0/24', '::ffff:10.0.0.1'])).toEqual(['10.0.0.0/7', '11.0.0.1', '2001:db9::/48', '192.0.2.0/24']);
  });

  it('an empty outer list contains everything', () => {
    expect(entriesOutside([], ['0.0.0.0/0', '::/0'])).toEqual([]);
  });
});
