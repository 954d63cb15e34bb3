import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { AdminAuthController } from './admin-auth.controller';
import { AdminAuthService } from './admin-auth.service';
import { AdminPasswordService, ConsoleOutput, StdoutConsoleOutput } from './admin-password.service';
import { CsrfMiddleware } from './csrf.middleware';
import { LoginThrottleMiddleware } from './login-throttle.middleware';
import { SessionMiddleware } from './session.middleware';

/** Admin sign-in: password, sessions (in the document database), login throttling, CSRF check. */
@Module({
  controllers: [AdminAuthController],
  providers: [AdminPasswordService, AdminAuthService, { provide: ConsoleOutput, useClass: StdoutConsoleOutput }],
  exports: [AdminPasswordService, AdminAuthService],
})
export class AdminAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // Every route of the modules (the API docs, mounted by configureApp, go without). The session
    // middleware itself skips Bearer requests and the liveness probe (session.middleware.ts).
    consumer.apply(SessionMiddleware, CsrfMiddleware).forRoutes('*');
    consumer.apply(LoginThrottleMiddleware).forRoutes({ path: 'api/login', method: RequestMethod.POST });
  }
}
