import { Global, Module } from '@nestjs/common';
import { TokenAuthenticator } from '../common/auth/token-authenticator';
import { TokenRateLimiter } from './token-rate-limiter';
import { TokensController } from './tokens.controller';
import { TokensService } from './tokens.service';

/** API tokens. Global so the app-level AuthGuard can inject TokenAuthenticator. */
@Global()
@Module({
  controllers: [TokensController],
  providers: [TokensService, TokenRateLimiter, { provide: TokenAuthenticator, useExisting: TokensService }],
  exports: [TokenAuthenticator, TokensService],
})
export class TokensModule {}
