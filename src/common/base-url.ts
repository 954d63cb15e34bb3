import type { Request } from 'express';
import type { AppConfig } from '../config/app-config';

/**
 * The service's public base URL (CONTRACT §6): MEMSTORE_PUBLIC_URL when set, otherwise derived
 * from the request. X-Forwarded-Proto/Host are honoured only with MEMSTORE_TRUST_PROXY (Express
 * applies that through its 'trust proxy' setting, which configureApp sets from the config).
 */
export function baseUrl(cfg: AppConfig, req: Request): string {
  if (cfg.publicUrl) return cfg.publicUrl;
  const host = req.host ?? `${cfg.host}:${cfg.port}`; // Express 5: X-Forwarded-Host only behind a trusted proxy
  const safeHost = /^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : `${cfg.host}:${cfg.port}`;
  return `${req.protocol}://${safeHost}`;
}
