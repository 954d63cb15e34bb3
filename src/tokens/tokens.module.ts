import { Global, Module } from '@nestjs/common';
import { TokenAuthenticator } from '../common/auth/token-authenticator';
import { UnauthorizedError } from '../common/errors';

// NOTE(skeleton): filled in by its owner. Global so the app-level AuthGuard can inject TokenAuthenticator.
@Global()
@Module({
  providers: [
    {
      provide: TokenAuthenticator,
      useValue: {
        authenticate: async () => {
          throw new UnauthorizedError('Invalid API token');
        },
      },
    },
  ],
  exports: [TokenAuthenticator],
})
export class TokensModule {}
