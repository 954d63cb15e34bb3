import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { AdminAuthController } from './admin-auth.controller';
import { AdminAuthService } from './admin-auth.service';
import { AdminPasswordService, ConsoleOutput, StdoutConsoleOutput } from './admin-password.service';
import { CsrfMiddleware } from './csrf.middleware';
import { LoginThrottleMiddleware } from './login-throttle.middleware';
import { SessionMiddleware } from './session.middleware';

/**
 * Admin sign-in: password, sessions (in the document database), login throttling, CSRF check.
 * The session and CSRF middleware run on every route: configureApp binds them.
 */
@Module({
  controllers: [AdminAuthController],
  providers: [AdminPasswordService, AdminAuthService, SessionMiddleware, CsrfMiddleware, { provide: ConsoleOutput, useClass: StdoutConsoleOutput }],
  exports: [AdminPasswordService, AdminAuthService],
})
export class AdminAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(LoginThrottleMiddleware).forRoutes({ path: 'api/login', method: RequestMethod.POST });
  }
}
