/**
 * Audited actions (a module of its own, with no imports, so the admin page shares it). Admin actions: sign-in (success and failure, with the username tried), sign-out,
 * password change (page or command line), token create/update/revoke/delete, settings change,
 * backend test, migration. Memory actions: delete, bulk delete, import (also failed or aborted),
 * restore, export (a bulk read), namespace purge. Refused API tokens (`token.refused`, aggregated: see recordRefusal).
 */
export const AUDIT_ACTIONS = [
  'admin.login',
  'admin.logout',
  'admin.password_change',
  'token.refused',
  'memory.export',
  'backend.migrate',
  'token.create',
  'token.update',
  'token.revoke',
  'token.delete',
  'settings.update',
  'backend.test',
  'memory.delete',
  'memory.bulk_delete',
  'memory.import',
  'memory.restore',
  'namespace.purge',
] as const;
