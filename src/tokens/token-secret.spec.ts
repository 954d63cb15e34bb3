import { createSecretKey, randomBytes } from 'node:crypto';
import { hashSecret, newTokenId, newTokenSecret, parseToken, plaintextToken, sameHash } from './token-secret';

describe('token secrets', () => {
  it('ids are 16 lowercase hex, secrets 256-bit base64url', () => {
    expect(newTokenId()).toMatch(/^[0-9a-f]{16}$/);
    const secret = newTokenSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    expect(newTokenSecret()).not.toBe(secret);
  });

  it('hashes a secret the same under the key as a Buffer or as a KeyObject (tokens stored earlier stay valid)', () => {
    const key = randomBytes(32);
    const secret = newTokenSecret();
    expect(hashSecret(createSecretKey(key), secret)).toBe(hashSecret(key, secret));
    expect(hashSecret(createSecretKey(key), secret)).not.toBe(hashSecret(randomBytes(32), secret));
  });

  it('parses the id up to the next "_" and keeps the rest (with its own "_") as the secret', () => {
    expect(parseToken('mem_tok_0123456789abcdef_ab_c-d_')).toEqual({ id: '0123456789abcdef', secret: 'ab_c-d_' });
    const secret = 'x_y_z';
    expect(parseToken(plaintextToken('fedcba9876543210', secret))).toEqual({ id: 'fedcba9876543210', secret });
  });

  it.each(['', 'mem_tok_', 'mem_tok_0123456789abcdef', 'mem_tok_0123456789abcdef_', 'mem_tok_0123456789ABCDEF_s', 'mem_tok_0123_s', 'tok_0123456789abcdef_s', 'mem_tok_0123456789abcdef0_s'])(
    'rejects %j',
    (text) => {
      expect(parseToken(text)).toBeNull();
    },
  );

  it('hashes with the service key and compares in constant time', () => {
    const key = Buffer.alloc(32, 1);
    const h = hashSecret(key, 'secret');
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(h).not.toContain('secret');
    expect(sameHash(h, hashSecret(key, 'secret'))).toBe(true);
    expect(sameHash(h, hashSecret(key, 'secreT'))).toBe(false);
    expect(sameHash(h, hashSecret(Buffer.alloc(32, 2), 'secret'))).toBe(false);
    expect(sameHash(h, '')).toBe(false);
  });
});
