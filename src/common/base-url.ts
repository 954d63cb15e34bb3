import type { Request } from 'express';
import type { AppConfig } from '../config/app-config';

/**
 * The service's public base URL (CONTRACT §6): MEMSTORE_PUBLIC_URL when set, otherwise derived
 * from the request. Behind a trusted proxy (MEMSTORE_TRUST_PROXY) the Host and X-Forwarded-Host/
 * Proto headers are the proxy's word and are used. Without one, a client's Host header is never
 * reflected into the guide, the skill prompt or a link (issue 46, decision 0052): the address the
 * request really reached (the socket's local address and port) is used instead, and the Host
 * header only when it names that same address or `localhost` on that port.
 */
export function baseUrl(cfg: AppConfig, req: Request): string {
  if (cfg.publicUrl) return cfg.publicUrl;
  if (cfg.trustProxy) {
    const host = req.host ?? `${cfg.host}:${cfg.port}`; // Express 5: X-Forwarded-Host only behind a trusted proxy
    const safeHost = /^[A-Za-z0-9.\-:[\]]+$/.test(host) ? host : `${cfg.host}:${cfg.port}`;
    return `${req.protocol}://${safeHost}`;
  }
  return `${req.protocol}://${reachedHost(cfg, req)}`;
}

/** host[:port] the request reached: the Host header when it names the local address (or localhost) and port, else that address. */
function reachedHost(cfg: AppConfig, req: Request): string {
  const raw = req.socket?.localAddress;
  const port = req.socket?.localPort ?? cfg.port;
  if (!raw) return `${cfg.host}:${cfg.port}`;
  const address = raw.startsWith('::ffff:') && raw.includes('.') ? raw.slice(7) : raw;
  const local = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  const given = (req.headers.host ?? '').toLowerCase();
  return given === local.toLowerCase() || given === `localhost:${port}` ? given : local;
}
