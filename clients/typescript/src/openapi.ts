/**
 * GENERATED from the Memory Store OpenAPI document (/openapi.json) by openapi-typescript.
 * Do not edit: run `npm run generate -w clients/typescript` against a running service.
 */
export interface paths {
    "/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The admin web page (HTML)
         * @description **Access:** Public: no credentials needed.
         */
        get: operations["getAdminPage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/password": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Change the admin password
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     Needs the current password. Every other admin session is signed out; this one stays. Refused (409) while MEMSTORE_ADMIN_PASSWORD or MEMSTORE_ADMIN_PASSWORD_HASH sets the password.
         */
        post: operations["changeAdminPassword"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The audit log, newest first (admin actions and destructive memory actions), paged and filterable
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         */
        get: operations["listAuditEntries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/config": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Settings in effect (secrets masked)
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     Values in effect with secrets masked, where each comes from (env, file, credentials, default), completeness, a one-line status and the active adapters.
         */
        get: operations["getConfig"];
        put?: never;
        /**
         * Save settings (partial)
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     Absent or null = unchanged, "" = cleared. Credentials go to the encrypted credential store, the rest to the config file. Takes effect without a restart; incomplete settings are saved anyway and reported in `missing`.
         */
        post: operations["saveConfig"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/config/path": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Where the config file and the credential store are
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         */
        get: operations["getConfigPath"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/config/raw": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Settings in effect, unmasked
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         */
        get: operations["getRawConfig"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/derive-endpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resolve the object store endpoint
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     An explicit endpoint wins; a Cloudflare account id gives https://<account_id>.r2.cloudflarestorage.com.
         */
        post: operations["deriveEndpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export memories as a zip archive (markdown files + manifest)
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["exportMemories"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/guide": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The API guide (markdown)
         * @description **Access:** Public: no credentials needed.
         *
         *     Every endpoint, authentication and scopes, errors, pagination, search syntax, limits and curl examples. A JSON envelope by default; the markdown itself with format=markdown or `Accept: text/markdown`.
         */
        get: operations["getGuide"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness probe
         * @description **Access:** Public: no credentials needed.
         *
         *     Answers without touching the backends.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Import memories from a zip, markdown or JSONL (raw request body)
         * @description **Access:** API token with scope `memory:write`, or an admin session.
         */
        post: operations["importMemories"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sign in as the administrator; sets the HttpOnly session cookie memstore.sid
         * @description **Access:** Public: no credentials needed.
         */
        post: operations["login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sign out (idempotent); ends the session and clears the cookie
         * @description **Access:** Public: no credentials needed.
         */
        post: operations["logout"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Who is calling: anonymous, the signed-in admin, or an API token
         * @description **Access:** Public: no credentials needed.
         */
        get: operations["getMe"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List or search memories
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["listMemories"];
        put?: never;
        /**
         * Create a memory
         * @description **Access:** API token with scope `memory:write`, or an admin session.
         *
         *     Answers the memory and `similar`: up to 3 stored memories of the same project that look like near-copies (update one of them instead of adding another). `supersedes` names older memories this one replaces (they drop out of searches and lists); a hint with `likely_update` suggests it.
         */
        post: operations["createMemory"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories/{memory_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Fetch a memory with its full content
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["getMemory"];
        put?: never;
        post?: never;
        /**
         * Delete a memory
         * @description **Access:** API token with scope `memory:delete`, or an admin session.
         */
        delete: operations["deleteMemory"];
        options?: never;
        head?: never;
        /**
         * Update some fields of a memory
         * @description **Access:** API token with scope `memory:write`, or an admin session.
         */
        patch: operations["updateMemory"];
        trace?: never;
    };
    "/api/memories/{memory_id}/download": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the markdown file, or get a signed download URL
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["downloadMemory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories/{memory_id}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the kept versions of a memory (newest first)
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["listMemoryVersions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories/{memory_id}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Fetch one kept version of a memory
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["getMemoryVersion"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories/{memory_id}/versions/{version}/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Restore a kept version (as a new version)
         * @description **Access:** API token with scope `memory:write`, or an admin session.
         */
        post: operations["restoreMemoryVersion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/memories/bulk-delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Delete many memories (at most 1000 ids)
         * @description **Access:** API token with scope `memory:delete`, or an admin session.
         */
        post: operations["bulkDeleteMemories"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/migrate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * After a backend change: how many memories the earlier backends hold, and the copy job
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         */
        get: operations["getMigration"];
        put?: never;
        /**
         * Copy the memories of the earlier backends to the active ones
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         */
        post: operations["startMigration"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/namespaces": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The namespaces the caller may see, with their memories and bytes (by name, paged); X-Memory-Namespace narrows it to one
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["listNamespaces"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/namespaces/purge": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Delete every memory of a namespace (or of a project/agent in it); send again to resume
         * @description **Access:** API token with scope `memory:delete`, or an admin session.
         */
        post: operations["purgeNamespace"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ready": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness probe
         * @description **Access:** Public: no credentials needed.
         *
         *     Whether both backends (document database, object store) answer: 200 when they do; else 503 with the error envelope plus `status: "not_ready"` and `not_ready`, the list of backends that do not answer (`docdb`, `objstore`), and no other detail. The liveness probe is /api/health.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/schema": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Settings form definition
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     Sections and fields of the configuration form (key, label, type, secret, required, help).
         */
        get: operations["getSettingsSchema"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/skill-pack.zip": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Skill pack for agent runtimes
         * @description **Access:** Public: no credentials needed.
         *
         *     A zip with memory-store/SKILL.md (YAML front matter: name, description) and memory-store/.env.example.
         */
        get: operations["getSkillPack"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/skill-prompt": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A prompt that teaches a model to use this service
         * @description **Access:** Public: no credentials needed.
         *
         *     format=json (default): a JSON envelope; format=text or markdown: the prompt as text/markdown. token_env (alias token_placeholder) names the environment variable holding the token.
         */
        get: operations["getSkillPrompt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Counts by type, scope, project and agent
         * @description **Access:** API token with scope `memory:read`, or an admin session.
         */
        get: operations["getStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Backend health summary
         * @description **Access:** An admin session or any valid API token.
         *
         *     Document database and object store health, the public URL, memory count, search mode and embeddings (provider, model, pending). Admin session or any valid API token; token holders see "reachable" instead of adapter details.
         */
        get: operations["getStatus"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Test the backends
         * @description **Access:** Admin session only (API tokens get 403; no credentials get 401).
         *
         *     Writes, reads and deletes a probe on the active document database and/or object store. target: all, docdb (alias mongodb), objstore (aliases s3, r2).
         */
        post: operations["testBackends"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API tokens (metadata only, newest first)
         * @description **Access:** API token with scope `tokens:manage`, or an admin session.
         *
         *     A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.
         */
        get: operations["listTokens"];
        put?: never;
        /**
         * Create an API token; the plaintext is returned once
         * @description **Access:** API token with scope `tokens:manage`, or an admin session.
         *
         *     A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.
         */
        post: operations["createToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/tokens/{token_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete a token for good
         * @description **Access:** API token with scope `tokens:manage`, or an admin session.
         *
         *     A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.
         */
        delete: operations["deleteToken"];
        options?: never;
        head?: never;
        /**
         * Change a token (name, scopes, namespaces, expiry, allow-list, unrevoke); the secret is not rotated
         * @description **Access:** API token with scope `tokens:manage`, or an admin session.
         *
         *     A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.
         */
        patch: operations["updateToken"];
        trace?: never;
    };
    "/api/tokens/{token_id}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a token (idempotent); it gets 401 from then on
         * @description **Access:** API token with scope `tokens:manage`, or an admin session.
         *
         *     A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.
         */
        post: operations["revokeToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics (text exposition format)
         * @description **Access:** API token with scope `metrics:read`, an admin session, or no credentials from an address in MEMSTORE_METRICS_ALLOWED_IPS (empty by default).
         *
         *     Requests and latency by route template and status, search latency by mode, memories per backend, backend health and check latency, failed sign-ins, throttled requests and process metrics. Readable by the signed-in admin, a token with scope `metrics:read`, or without credentials from an address in MEMSTORE_METRICS_ALLOWED_IPS (empty by default: never public).
         */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        ActiveBackendsDto: {
            /**
             * @description Active document database adapter: 'sqlite' or 'mongodb'.
             * @example sqlite
             */
            docdb: string;
            /**
             * @description Active object store adapter: 'filesystem' or 's3'.
             * @example filesystem
             */
            objstore: string;
        };
        AuditActorDto: {
            /** @description Admin username or token id */
            id: string | null;
            /** @enum {string} */
            kind: "admin" | "token" | "anonymous";
            /** @description Token name (admin: the username) */
            name: string | null;
        };
        AuditEntryDto: {
            /** @enum {string} */
            action: "admin.login" | "admin.logout" | "admin.password_change" | "token.refused" | "memory.export" | "backend.migrate" | "token.create" | "token.update" | "token.revoke" | "token.delete" | "settings.update" | "backend.test" | "memory.delete" | "memory.bulk_delete" | "memory.import" | "memory.restore" | "namespace.purge";
            actor: components["schemas"]["AuditActorDto"];
            /** @description Client address */
            address: string | null;
            /** Format: date-time */
            at: string;
            /** @description Non-secret facts: field names, counts, the error of a failure */
            detail: {
                [key: string]: unknown;
            };
            /** @description Sortable entry id */
            id: string;
            /** @enum {string} */
            outcome: "success" | "failure";
            request_id: string | null;
            /** @description Token id or memory id acted on */
            target: string | null;
        };
        AuditListResponseDto: {
            /** @description Newest first */
            entries: components["schemas"]["AuditEntryDto"][];
            /** @description Pass as cursor for the next (older) page; null on the last page */
            next_cursor: string | null;
            /** @enum {boolean} */
            ok: true;
        };
        AuthorDto: {
            /**
             * @description Token id, or the admin's user name.
             * @example 3f9a2c1d4e5b6a70
             */
            id: string;
            /** @description Only on a version written by an import: the author above is the importer; this is what the file claimed. */
            imported?: components["schemas"]["ImportClaimDto"];
            /**
             * @example token
             * @enum {string}
             */
            kind: "token" | "admin";
            /**
             * @description Token name at the time of the write (null for the admin).
             * @example release-bot
             */
            name: string | null;
        };
        BackendStatusDto: {
            /** @example sqlite */
            backend: string;
            /** @example embedded SQLite at ./data/memstore.db */
            detail: string;
            /** @example true */
            ok: boolean;
        };
        BackendTestResultDto: {
            /** @example sqlite */
            backend: string;
            /** @example embedded SQLite at ./data/memstore.db: wrote, read and deleted a probe */
            detail?: string;
            /** @example Object store unavailable: bucket 'x' does not exist */
            error?: string;
            /** @example 3 */
            latency_ms: number;
            /** @example true */
            ok: boolean;
        };
        BackendTestResultsDto: {
            docdb?: components["schemas"]["BackendTestResultDto"];
            objstore?: components["schemas"]["BackendTestResultDto"];
        };
        BulkDeleteDto: {
            /**
             * @description Absent: nothing is deleted
             * @default []
             * @example [
             *       "6740a1b2c3d4e5f601234567"
             *     ]
             */
            ids?: string[];
        };
        BulkDeleteResponseDto: {
            /**
             * @description How many memories were deleted.
             * @example 1
             */
            deleted: number;
            /**
             * @example [
             *       "6740a1b2c3d4e5f601234567"
             *     ]
             */
            ids: string[];
            /**
             * @description Ids that did not exist.
             * @example []
             */
            missing: string[];
            /** @example true */
            ok: boolean;
        };
        ChangePasswordDto: {
            /**
             * Format: password
             * @example the password you signed in with
             */
            current_password: string;
            /**
             * Format: password
             * @description At least 12 characters, at most 72 bytes (bcrypt).
             * @example a long passphrase of your own
             */
            new_password: string;
        };
        ChangePasswordResponseDto: {
            /** @example true */
            ok: boolean;
            /**
             * @description Other admin sessions that were signed out (this one stays signed in).
             * @example 1
             */
            sessions_signed_out: number;
        };
        ConfigPathResponseDto: {
            config_file: components["schemas"]["FilePathDto"];
            credential_store: components["schemas"]["FilePathDto"];
            /** @example true */
            ok: boolean;
        };
        ConfigResponseDto: {
            active: components["schemas"]["ActiveBackendsDto"];
            /** @example true */
            complete: boolean;
            /** @description Values in effect; secrets masked. */
            config: components["schemas"]["SettingValuesDto"];
            /** @example [] */
            missing: string[];
            /** @example true */
            ok: boolean;
            sources: components["schemas"]["SettingSourcesDto"];
            /** @example Document database: embedded SQLite at ./data/memstore.db. Object store: filesystem at ./data/objects. Settings complete. */
            status: string;
        };
        CreatedMemoryResponseDto: {
            /**
             * @description Present when a hint is a likely update: a sentence saying how to pass `supersedes` (decision 0130).
             * @example This looks like a newer statement of 6740a1b2c3d4e5f601234567. If it replaces it, pass supersedes: ["6740a1b2c3d4e5f601234567"] …
             */
            hint?: string;
            memory: components["schemas"]["MemoryDto"];
            /** @example true */
            ok: boolean;
            /** @description At most 3 stored memories whose meaning is very close (cosine >= 0.86); empty when search is keyword-only. */
            similar: components["schemas"]["SimilarMemoryDto"][];
        };
        CreatedTokenResponseDto: {
            /** @example true */
            ok: boolean;
            /**
             * @description Shown once; store it now
             * @example mem_tok_3f9a0c1d2e4b5a69_q9V2w0lH0y3f8m4o1pV7f5bM2aT6sXc9eK0dR3uJ8nA
             */
            plaintext: string;
            token: components["schemas"]["TokenDto"];
        };
        CreateMemoryDto: {
            /** @example release-bot */
            agent?: string | null;
            /**
             * @description Markdown body: 1 byte to 1 MiB of UTF-8, not only whitespace.
             * @example Deploys go through the blue-green pipeline; never deploy on Fridays.
             */
            content: string;
            /** @example payments */
            project?: string | null;
            /**
             * @default global
             * @enum {string|null}
             */
            scope?: "global" | "project" | "agent" | "user" | null;
            /**
             * @description At most 20 ids of stored memories (not this one); an id that does not exist is refused (422) and nothing is written
             * @example []
             */
            supersedes?: string[] | null;
            /**
             * @description At most 50 after dropping empty and duplicate tags; each at most 64 characters after trimming
             * @example [
             *       "deploy",
             *       "policy"
             *     ]
             */
            tags?: string[] | null;
            /** @example Deployment policy */
            title?: string | null;
            /**
             * @default note
             * @enum {string|null}
             */
            type?: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation" | null;
        };
        CreateTokenDto: {
            /**
             * @description IPv4/IPv6 addresses or CIDR ranges the token may be used from; empty or null = any address.
             * @example [
             *       "127.0.0.0/8",
             *       "::1"
             *     ]
             */
            allowed_ips?: string[] | null;
            /** @description Unix epoch seconds, in the future; exclusive with expires_in_days */
            expires_at?: number | null;
            /**
             * @description Lifetime in days (1..3650). Exclusive with `expires_at`.
             * @example 90
             */
            expires_in_days?: number | null;
            /**
             * @description A label for people (e.g. the agent or machine using the token).
             * @default
             * @example laptop agent
             */
            name?: string | null;
            /**
             * @description Namespaces the token may work in: names (acme/alice), prefixes (acme/*) or * (all, admin only). Default on create: ["default"] (by a tokens:manage token: its own). A tokens:manage token may grant only namespaces inside its own
             * @example [
             *       "acme/alice"
             *     ]
             */
            namespaces?: string[] | null;
            /**
             * @description read-only = [memory:read]; read-write = [memory:read, memory:write]; full = all three. Default read-only.
             * @example read-write
             * @enum {string|null}
             */
            preset?: "read-only" | "read-write" | "full" | null;
            /**
             * @description Requests per minute this token may send; 0 = unlimited. Absent: the service default (MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE, 600).
             * @example 600
             */
            rate_limit_per_minute?: number | null;
            /**
             * @description Scopes granted; wins over `preset`.
             * @example [
             *       "memory:read",
             *       "memory:write"
             *     ]
             */
            scopes?: ("memory:read" | "memory:write" | "memory:delete" | "metrics:read" | "tokens:manage")[] | null;
        };
        DeleteMemoryResponseDto: {
            /** @example true */
            deleted: boolean;
            /** @example 6740a1b2c3d4e5f601234567 */
            id: string;
            /** @example true */
            ok: boolean;
        };
        DeriveEndpointDto: {
            /**
             * @description Cloudflare account id.
             * @example 0123456789abcdef0123456789abcdef
             */
            account_id?: string | null;
            /**
             * @description Explicit endpoint; wins over the account id.
             * @example https://s3.eu-west-1.amazonaws.com
             */
            endpoint?: string | null;
            /** @description Same as account_id (the config key spelling). */
            objstore_account_id?: string | null;
            /** @description Same as endpoint (the config key spelling). */
            objstore_endpoint?: string | null;
        };
        DeriveEndpointResponseDto: {
            /** @example https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com */
            endpoint: string;
            /** @example true */
            ok: boolean;
            /**
             * @example account_id
             * @enum {string}
             */
            source: "explicit" | "account_id";
        };
        DownloadUrlResponseDto: {
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            expires_at: string;
            /**
             * @description Seconds the URL stays valid (objstore_presign_ttl).
             * @example 3600
             */
            expires_in: number;
            /** @example true */
            ok: boolean;
            /** @example http://127.0.0.1:8080/api/files/memories/6740a1b2c3d4e5f601234567.md?expires=1795253400&sig=... */
            url: string;
        };
        EmbeddingStatusDto: {
            /** @example 384 */
            dimensions: number | null;
            /**
             * @description Memories with a vector of the current model.
             * @example 42
             */
            embedded: number | null;
            /**
             * @description Waiting memories whose last attempt failed (retried with backoff).
             * @example 0
             */
            failing: number | null;
            /** @example null */
            last_error: string | null;
            /** @example bge-small-en-v1.5 */
            model: string | null;
            /**
             * @description Memories waiting for a vector of the current model (null when it could not be counted).
             * @example 0
             */
            pending: number | null;
            /**
             * @description Share of memories embedded with the current model, 0..1.
             * @example 1
             */
            progress: number | null;
            /**
             * @example local
             * @enum {string}
             */
            provider: "local" | "openai" | "none";
            /**
             * @description Why search is keyword-only, when it is.
             * @example null
             */
            reason: string | null;
            /**
             * @example ready
             * @enum {string}
             */
            state: "keyword-only" | "ready" | "embedding" | "re-embedding";
        };
        /** @description CONTRACT §1 error envelope */
        ErrorResponse: {
            /**
             * @description Only on 403 answers to a write over a namespace quota (decision 0156)
             * @enum {string}
             */
            code?: "namespace_quota_exceeded";
            /** @description Only on 412 answers: the version the memory has now (fetch, merge, retry) */
            current_version?: number;
            /** @example Memory not found */
            error: string;
            /**
             * @example false
             * @enum {boolean}
             */
            ok: false;
            /** @description With code namespace_quota_exceeded: which quota, of which namespace, its limit, what is used and what the write asked for */
            quota?: {
                limit: number;
                /** @enum {string} */
                name: "memories" | "bytes";
                namespace: string;
                requested: number;
                used: number;
            };
            /** @description With code namespace_quota_exceeded on an import: what was done before it stopped */
            report?: {
                created?: number;
                invalid?: number;
                processed?: number;
                skipped?: number;
                updated?: number;
            };
            /** @description Only on 500 answers */
            request_id?: string;
        };
        FilePathDto: {
            /** @example true */
            exists: boolean;
            /** @example /var/lib/memstore/config.json */
            path: string;
        };
        GuideResponseDto: {
            /**
             * @description The guide, in markdown.
             * @example # Memory Store API guide (version 1)
             *     ...
             */
            guide: string;
            /** @example true */
            ok: boolean;
            /**
             * @description Version of the guide.
             * @example 1
             */
            version: number;
        };
        HealthResponseDto: {
            /** @example true */
            ok: boolean;
            /** @example ok */
            status: string;
        };
        ImportClaimDto: {
            /**
             * @example {
             *       "kind": "admin",
             *       "id": "admin",
             *       "name": null
             *     }
             */
            claimed_author: Record<string, never> | null;
            /**
             * Format: date-time
             * @example 2020-01-01T00:00:00.000Z
             */
            claimed_created_at: string;
            /**
             * Format: date-time
             * @example 2020-01-01T00:00:00.000Z
             */
            claimed_updated_at: string;
            /** @example 7 */
            claimed_version: number;
        };
        ImportItemDto: {
            /** @example memories/6740c0ffee0000000000abcd.md */
            file: string;
            id: string | null;
            /** @example front matter is not valid YAML: … */
            reason: string | null;
            /** @enum {string} */
            status: "created" | "updated" | "skipped" | "invalid";
        };
        ImportReportDto: {
            created: number;
            dry_run: boolean;
            /** @enum {string} */
            format: "zip" | "jsonl" | "markdown";
            invalid: number;
            /** @description One entry per file, at most 1000 (the progress stream has every one). */
            items: components["schemas"]["ImportItemDto"][];
            items_omitted: number;
            /** @example true */
            ok: boolean;
            /** @enum {string} */
            on_conflict: "skip" | "overwrite" | "new_id";
            processed: number;
            skipped: number;
            updated: number;
            /** @description Earlier versions restored into memories' history (an export's `history/<id>/<n>.md`); these files are not counted in `created`. */
            versions: number;
        };
        LoginDto: {
            /**
             * Format: password
             * @default
             * @example correct horse battery staple
             */
            password?: string;
            /**
             * @default
             * @example admin
             */
            username?: string;
        };
        LoginResponseDto: {
            /**
             * @description The password is the one generated at the first start: choose your own (POST /api/admin/password).
             * @example false
             */
            must_change_password: boolean;
            /** @example true */
            ok: boolean;
            /** @example admin */
            username: string;
        };
        LogoutResponseDto: {
            /** @example true */
            ok: boolean;
        };
        MemoryDto: {
            /** @example release-bot */
            agent: string | null;
            /** @example Deploys go through the blue-green pipeline; never deploy on Fridays. */
            content: string;
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /** @example 6740a1b2c3d4e5f601234567 */
            id: string;
            /**
             * @description The namespace the memory belongs to (issue 43): the request’s own; `default` for a token bound to it or to *
             * @example default
             */
            namespace: string;
            /** @example payments */
            project: string | null;
            /**
             * @example project
             * @enum {string}
             */
            scope: "global" | "project" | "agent" | "user";
            /**
             * @description Set when a newer memory replaced this one (`supersedes`, decision 0130): the newer memory's id.
             * @example 6740a1b2c3d4e5f601234567
             */
            superseded_by?: string;
            /**
             * @example [
             *       "deploy",
             *       "policy"
             *     ]
             */
            tags: string[];
            /** @example Deployment policy */
            title: string | null;
            /**
             * @example decision
             * @enum {string}
             */
            type: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation";
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /**
             * Format: date-time
             * @description Set with superseded_by: when the superseding write happened (the end of this memory's validity).
             * @example 2026-11-21T09:30:00.000Z
             */
            valid_to?: string;
            /**
             * @description Write counter: 1 on create, +1 on every change; also the ETag (`"<version>"`) for If-Match.
             * @example 1
             */
            version: number;
        };
        MemoryListResponseDto: {
            /**
             * @description Hybrid and semantic searches: the highest score among the memories the floor (`min_score`)
             *     left out, null when it left none out. An empty answer with a value near the floor means a
             *     related memory exists: pass this value as `min_score` to see it; 0 means nothing came close.
             * @example 0.33
             */
            best_below_floor?: number | null;
            /**
             * @description Rows in this page.
             * @example 1
             */
            count: number;
            /** @example false */
            has_next: boolean;
            /** @example false */
            has_prev: boolean;
            /**
             * @example list
             * @enum {string}
             */
            mode: "list" | "search";
            /**
             * @description Pass as `after` for the next page (list mode); null on the last page and in search mode.
             * @example null
             */
            next_cursor: string | null;
            /** @example true */
            ok: boolean;
            /**
             * @description 1-based page; null after a cursor.
             * @example 1
             */
            page: number | null;
            /** @example 20 */
            page_size: number;
            rows: components["schemas"]["MemoryRowDto"][];
            /**
             * @description Search only: the ranking that ran (keyword when no embedding model is available).
             * @example hybrid
             * @enum {string}
             */
            search_mode?: "hybrid" | "keyword" | "semantic";
            /**
             * @description Rows matching the query and filters.
             * @example 1
             */
            total: number;
            /** @example 1 */
            total_pages: number;
        };
        MemoryResponseDto: {
            memory: components["schemas"]["MemoryDto"];
            /** @example true */
            ok: boolean;
        };
        MemoryRowDto: {
            /** @example release-bot */
            agent: string | null;
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /** @description Semantic and hybrid searches with explain=true: the signals that placed the row. */
            explain?: components["schemas"]["SearchExplainDto"];
            /** @example 6740a1b2c3d4e5f601234567 */
            id: string;
            /**
             * @description Hybrid and semantic searches: which lists matched the memory.
             * @example [
             *       "keyword",
             *       "semantic"
             *     ]
             */
            matched?: ("keyword" | "semantic")[];
            /**
             * @description The namespace the memory belongs to (issue 43): the request’s own; `default` for a token bound to it or to *
             * @example default
             */
            namespace: string;
            /** @example payments */
            project: string | null;
            /**
             * @example project
             * @enum {string}
             */
            scope: "global" | "project" | "agent" | "user";
            /**
             * @description Search mode only: relevance, higher is better. Hybrid and semantic: an absolute relevance
             *     0..1, comparable across queries (rows below the floor, `min_score`, are not returned);
             *     keyword: the full-text ranking's own score (comparable within one answer only).
             * @example 0.82
             */
            score?: number;
            /**
             * @description List mode: the start of the content; search mode: the passage around the best match.
             * @example Deploys go through the blue-green pipeline; never deploy on Fridays.
             */
            snippet: string;
            /**
             * @description Set when a newer memory replaced this one (`supersedes`, decision 0130): the newer memory's id.
             * @example 6740a1b2c3d4e5f601234567
             */
            superseded_by?: string;
            /**
             * @example [
             *       "deploy",
             *       "policy"
             *     ]
             */
            tags: string[];
            /** @example Deployment policy */
            title: string | null;
            /**
             * @example decision
             * @enum {string}
             */
            type: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation";
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /**
             * Format: date-time
             * @description Set with superseded_by: when the superseding write happened (the end of this memory's validity).
             * @example 2026-11-21T09:30:00.000Z
             */
            valid_to?: string;
            /**
             * @description Write counter: 1 on create, +1 on every change; also the ETag (`"<version>"`) for If-Match.
             * @example 1
             */
            version: number;
        };
        MemoryStatusDto: {
            /**
             * @description Number of memories (null when it could not be counted).
             * @example 42
             */
            count: number | null;
            /** @example fts5 */
            search_mode: string | null;
        };
        MeResponseDto: {
            /** @example true */
            authenticated: boolean;
            /**
             * @example admin
             * @enum {string}
             */
            kind?: "admin" | "token";
            /**
             * @description kind=admin only: the password is the generated one; the page asks to choose another
             * @example false
             */
            must_change_password?: boolean;
            /** @example true */
            ok: boolean;
            /**
             * @description kind=token only
             * @example [
             *       "memory:read"
             *     ]
             */
            scopes?: string[];
            /**
             * @description kind=token only
             * @example 3f9a0c1d2e4b5a69
             */
            token_id?: string;
            /**
             * @description kind=admin only
             * @example admin
             */
            username?: string;
        };
        NamespaceListResponseDto: {
            /** @example false */
            has_next: boolean;
            /** @description By name. A token sees the namespaces of its binding that hold memories, and its exact names even when empty; the admin and a '*' token see all */
            namespaces: components["schemas"]["NamespaceUsageDto"][];
            /**
             * @description Pass as `after` for the next page; null on the last
             * @example null
             */
            next_cursor: string | null;
            /** @example true */
            ok: boolean;
            /** @description The quotas every namespace has */
            quota: components["schemas"]["NamespaceQuotaDto"];
        };
        NamespaceQuotaDto: {
            /**
             * @description Bytes of content a namespace may hold (MEMSTORE_NAMESPACE_MAX_BYTES); null: no quota
             * @example null
             */
            max_bytes: number | null;
            /**
             * @description Memories a namespace may hold (MEMSTORE_NAMESPACE_MAX_MEMORIES); null: no quota
             * @example null
             */
            max_memories: number | null;
        };
        NamespaceUsageDto: {
            /**
             * @description UTF-8 bytes of their current content
             * @example 3400000
             */
            bytes: number;
            /**
             * @description Memories in the namespace
             * @example 1200
             */
            memories: number;
            /** @example acme/alice */
            namespace: string;
        };
        PurgeNamespaceDto: {
            /** @description Only the memories of this agent */
            agent?: string;
            /** @description Only the memories of this project */
            project?: string;
        };
        PurgeReceiptDto: {
            /**
             * @description Memories deleted, each with its versions, vector, embedding job and objects
             * @example 1000
             */
            deleted: number;
            /**
             * Format: date-time
             * @example 2026-11-27T09:00:00.000Z
             */
            finished_at: string;
            /** @example acme/alice */
            namespace: string;
            /** @example true */
            ok: boolean;
        };
        RawConfigResponseDto: {
            /** @description Values in effect, unmasked. */
            config: components["schemas"]["SettingValuesDto"];
            /** @example true */
            ok: boolean;
        };
        ReadyResponseDto: {
            /** @example true */
            ok: boolean;
            /**
             * @example ready
             * @enum {string}
             */
            status: "ready";
        };
        SaveConfigDto: {
            /**
             * @description MongoDB database name.
             * @example memstore
             */
            docdb_db?: string | null;
            /**
             * @description MongoDB connection string (mongodb:// or mongodb+srv://). Secret.
             * @example mongodb+srv://memstore:password@cluster0.example.mongodb.net/memstore
             */
            docdb_uri?: string | null;
            /**
             * @description API key of the embeddings API. Secret.
             * @example sk-...
             */
            embedding_api_key?: string | null;
            /**
             * @description The model’s cosine for unrelated text and for a clear match, mapped to relevance 0 and 1 (openai provider).
             * @example 0.2, 0.6
             */
            embedding_cosine_scale?: string | null;
            /**
             * @description Vector dimensions asked of the model (openai provider).
             * @example 1536
             */
            embedding_dimensions?: string | null;
            /**
             * @description Embedding model name (openai provider).
             * @example text-embedding-3-small
             */
            embedding_model?: string | null;
            /**
             * @description Embedding provider: local (in-process model), openai (OpenAI-compatible API) or none (keyword-only).
             * @example local
             * @enum {string|null}
             */
            embedding_provider?: "local" | "openai" | "none" | null;
            /**
             * @description Base URL of an OpenAI-compatible embeddings API (openai provider).
             * @example https://api.openai.com/v1
             */
            embedding_url?: string | null;
            /**
             * @description MongoDB collection for the memory index.
             * @example memories
             */
            memory_collection?: string | null;
            /**
             * @description Versions kept per memory (1..1000, default 20); a numeric string is accepted.
             * @example 20
             */
            memory_history_keep?: (number | string) | null;
            /**
             * @description Object store access key id. Secret.
             * @example AKIAIOSFODNN7EXAMPLE
             */
            objstore_access_key_id?: string | null;
            /**
             * @description Cloudflare account id (derives the R2 endpoint).
             * @example 0123456789abcdef0123456789abcdef
             */
            objstore_account_id?: string | null;
            /**
             * @description Bucket; when set the S3-compatible store is used.
             * @example memory-store
             */
            objstore_bucket?: string | null;
            /**
             * @description Explicit http(s) endpoint of the S3 API.
             * @example https://s3.eu-west-1.amazonaws.com
             */
            objstore_endpoint?: string | null;
            /**
             * @description Download URL lifetime in seconds (1..604800, default 3600); a numeric string is accepted.
             * @example 3600
             */
            objstore_presign_ttl?: (number | string) | null;
            /**
             * @description Public http(s) base URL of the bucket.
             * @example https://files.example.com
             */
            objstore_public_base?: string | null;
            /**
             * @description Object store secret access key. Secret.
             * @example wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
             */
            objstore_secret_access_key?: string | null;
        };
        SaveConfigResponseDto: {
            /** @description Adapters in effect after the save. */
            active: components["schemas"]["ActiveBackendsDto"];
            /** @example false */
            complete: boolean;
            /**
             * @example [
             *       "objstore_access_key_id",
             *       "objstore_secret_access_key"
             *     ]
             */
            missing: string[];
            /** @example true */
            ok: boolean;
            /**
             * @description Saved keys still overridden by the environment (the saved value is not in effect).
             * @example []
             */
            overridden: string[];
            /**
             * @example [
             *       "objstore_bucket",
             *       "objstore_endpoint"
             *     ]
             */
            saved: string[];
            /**
             * @description Problems applying the new settings (e.g. a backend that could not be switched to).
             * @example []
             */
            warnings: string[];
        };
        SchemaDto: {
            sections: components["schemas"]["SchemaSectionDto"][];
        };
        SchemaFieldDto: {
            /** @example null */
            default?: (string | number) | null;
            /** @example When set, the S3-compatible store replaces the filesystem store. */
            help: string;
            /** @example objstore_bucket */
            key: string;
            /** @example Bucket */
            label: string;
            /**
             * @description The only values the field takes (the page shows a choice).
             * @example [
             *       "local",
             *       "openai",
             *       "none"
             *     ]
             */
            options?: string[];
            /** @example memory-store */
            placeholder?: string;
            /**
             * @description Required when the backend of its section is in use.
             * @example false
             */
            required: boolean;
            /** @example false */
            secret: boolean;
            /**
             * @example config_file
             * @enum {string}
             */
            store: "config_file" | "credential_store";
            /**
             * @example text
             * @enum {string}
             */
            type: "text" | "url" | "secret" | "number";
        };
        SchemaResponseDto: {
            /** @example true */
            ok: boolean;
            schema: components["schemas"]["SchemaDto"];
        };
        SchemaSectionDto: {
            /** @example Where each memory is kept as a markdown file. */
            description: string;
            fields: components["schemas"]["SchemaFieldDto"][];
            /**
             * @example objstore
             * @enum {string}
             */
            id: "docdb" | "objstore" | "embeddings";
            /** @example Object store */
            title: string;
        };
        SearchExplainDto: {
            /**
             * @description Cosine similarity of the memory's vector and the query's; null while the memory waits for its embedding.
             * @example 0.71
             */
            cosine: number | null;
            /**
             * @description The floor in force: rows scoring below it are not returned.
             * @example 0.4
             */
            floor: number;
            /**
             * @description Keyword evidence 0..1: the share of the query's rarity-weighted words it holds, scaled by how rare the rarest of them is.
             * @example 0.83
             */
            keyword: number;
            /**
             * @description The backend's own keyword score when the memory is in the keyword list (its scale depends on the backend), else null.
             * @example 7.31
             */
            keyword_score: number | null;
            /**
             * @description Quoted phrases of the query found as phrases (they weigh; in semantic and hybrid searches they never filter).
             * @example []
             */
            matched_phrases: string[];
            /**
             * @description Query words the memory holds (stems match: "deploy" finds "Deployments").
             * @example [
             *       "deploy"
             *     ]
             */
            matched_words: string[];
            /**
             * @description What the memory's conversation neighbours among the hits added (conversation turns only).
             * @example 0
             */
            neighbour_boost: number;
            /**
             * @description A second stage's score for the row, when one ran; null otherwise.
             * @example null
             */
            rescore: number | null;
            /**
             * @description The row's final score (same as `score`).
             * @example 0.92
             */
            score: number;
            /**
             * @description Semantic evidence 0..1: the cosine, calibrated (0 at what unrelated text scores; a memory that is not a conversation turn gets 0.2 more, since a note embedded alone scores lower cosines).
             * @example 0.53
             */
            semantic: number;
            /**
             * @description Further per-row signals by name (for example a date match), each what it added (`long_memory`: what a long text's length cost its words); `same_session` only moved the row down the order (its score is unchanged).
             * @example {}
             */
            signals: {
                [key: string]: number;
            };
        };
        SettingSourcesDto: {
            /**
             * @example file
             * @enum {string}
             */
            docdb_db: "env" | "file" | "credentials" | "default";
            /**
             * @example credentials
             * @enum {string}
             */
            docdb_uri: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_api_key: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_cosine_scale: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_dimensions: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_model: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_provider: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            embedding_url: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            memory_collection: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            memory_history_keep: "env" | "file" | "credentials" | "default";
            /**
             * @example credentials
             * @enum {string}
             */
            objstore_access_key_id: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            objstore_account_id: "env" | "file" | "credentials" | "default";
            /**
             * @example env
             * @enum {string}
             */
            objstore_bucket: "env" | "file" | "credentials" | "default";
            /**
             * @example file
             * @enum {string}
             */
            objstore_endpoint: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            objstore_presign_ttl: "env" | "file" | "credentials" | "default";
            /**
             * @example default
             * @enum {string}
             */
            objstore_public_base: "env" | "file" | "credentials" | "default";
            /**
             * @example credentials
             * @enum {string}
             */
            objstore_secret_access_key: "env" | "file" | "credentials" | "default";
        };
        SettingValuesDto: {
            /** @example memstore */
            docdb_db: string | null;
            /** @example mongodb://memstore:********@db.example.com:27017/memstore */
            docdb_uri: string | null;
            /** @example null */
            embedding_api_key: string | null;
            /** @example null */
            embedding_cosine_scale: string | null;
            /** @example null */
            embedding_dimensions: string | null;
            /** @example null */
            embedding_model: string | null;
            /**
             * @example local
             * @enum {string|null}
             */
            embedding_provider: "local" | "openai" | "none" | null;
            /** @example null */
            embedding_url: string | null;
            /** @example memories */
            memory_collection: string | null;
            /** @example 20 */
            memory_history_keep: number;
            /** @example AKIA********LE */
            objstore_access_key_id: string | null;
            /** @example null */
            objstore_account_id: string | null;
            /** @example memory-store */
            objstore_bucket: string | null;
            /** @example https://s3.eu-west-1.amazonaws.com */
            objstore_endpoint: string | null;
            /** @example 3600 */
            objstore_presign_ttl: number;
            /** @example null */
            objstore_public_base: string | null;
            /** @example ******** */
            objstore_secret_access_key: string | null;
        };
        SimilarMemoryDto: {
            /** @example 6740a1b2c3d4e5f601234567 */
            id: string;
            /**
             * @description True when it looks like an older statement of what the new memory says (same subject, different text): pass `supersedes` if the new one replaces it.
             * @example false
             */
            likely_update: boolean;
            /**
             * @description Cosine similarity of the two memories' embeddings (0..1).
             * @example 0.93
             */
            score: number;
            /** @example Deployment policy */
            title: string | null;
        };
        SkillPromptResponseDto: {
            /** @example http://127.0.0.1:8080 */
            base_url: string;
            /**
             * @description Format of `prompt`.
             * @example markdown
             */
            format: string;
            /** @example true */
            ok: boolean;
            /**
             * @description The prompt, in markdown.
             * @example # Memory Store
             *
             *     You have a long-term memory...
             */
            prompt: string;
            /** @example MEMORY_API_TOKEN */
            token_env: string;
        };
        StatsDto: {
            /**
             * @description Memories without an agent count under "(none)".
             * @example {
             *       "release-bot": 1,
             *       "(none)": 2
             *     }
             */
            by_agent: {
                [key: string]: number;
            };
            /**
             * @description Memories without a project count under "(none)".
             * @example {
             *       "payments": 1,
             *       "(none)": 2
             *     }
             */
            by_project: {
                [key: string]: number;
            };
            /**
             * @description Every scope, zeros included.
             * @example {
             *       "global": 2,
             *       "project": 1,
             *       "agent": 0,
             *       "user": 0
             *     }
             */
            by_scope: {
                [key: string]: number;
            };
            /**
             * @description Every type, zeros included.
             * @example {
             *       "note": 2,
             *       "fact": 0,
             *       "decision": 1,
             *       "task": 0,
             *       "preference": 0,
             *       "reference": 0,
             *       "code": 0,
             *       "conversation": 0
             *     }
             */
            by_type: {
                [key: string]: number;
            };
            /** @example 3 */
            total: number;
        };
        StatsResponseDto: {
            /** @example true */
            ok: boolean;
            stats: components["schemas"]["StatsDto"];
        };
        StatusResponseDto: {
            docdb: components["schemas"]["BackendStatusDto"];
            embeddings: components["schemas"]["EmbeddingStatusDto"];
            memories: components["schemas"]["MemoryStatusDto"];
            objstore: components["schemas"]["BackendStatusDto"];
            /** @example true */
            ok: boolean;
            /** @example http://127.0.0.1:8080 */
            public_url: string;
        };
        TestBackendsDto: {
            /**
             * @description Which backend to test: all, docdb (alias mongodb) or objstore (aliases s3, r2).
             * @default all
             * @example all
             * @enum {string|null}
             */
            target?: "all" | "docdb" | "objstore" | "mongodb" | "s3" | "r2" | null;
        };
        TestBackendsResponseDto: {
            /**
             * @description The request succeeded; each result says whether its backend works.
             * @example true
             */
            ok: boolean;
            results: components["schemas"]["BackendTestResultsDto"];
        };
        TokenDeletedResponseDto: {
            /** @example true */
            deleted: boolean;
            /** @example 3f9a0c1d2e4b5a69 */
            id: string;
            /** @example true */
            ok: boolean;
        };
        TokenDto: {
            /**
             * @description Empty = any address
             * @example [
             *       "127.0.0.0/8"
             *     ]
             */
            allowed_ips: string[];
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /**
             * @description The id of the manager token (tokens:manage) that minted it; null when the administrator did. Revoking or deleting that token revokes this one.
             * @example null
             */
            created_by: string | null;
            /**
             * @description Unix epoch seconds, or null for no expiry
             * @example 1798761600
             */
            expires_at: number | null;
            /**
             * @description 16 lowercase hex characters
             * @example 3f9a0c1d2e4b5a69
             */
            id: string;
            /**
             * Format: date-time
             * @description Updated at most once a minute
             * @example 2026-11-21T10:02:11.417Z
             */
            last_used_at: string | null;
            /** @example laptop agent */
            name: string;
            /**
             * @description Namespaces the token may work in (names, prefixes p/*, or *)
             * @example [
             *       "default"
             *     ]
             */
            namespaces: string[];
            /**
             * @description The public part of the plaintext token
             * @example mem_tok_3f9a0c1d2e4b5a69
             */
            prefix: string;
            /**
             * @description Requests per minute this token may send; 0 = unlimited
             * @example 600
             */
            rate_limit_per_minute: number;
            /**
             * @description Requests per minute recently admitted for this token (as counted by the instance that answers)
             * @example 12
             */
            recent_requests_per_minute: number;
            /**
             * Format: date-time
             * @description Set by a revocation, also when the token that minted it was revoked or deleted
             * @example null
             */
            revoked_at: string | null;
            /**
             * @example [
             *       "memory:read",
             *       "memory:write"
             *     ]
             */
            scopes: ("memory:read" | "memory:write" | "memory:delete" | "metrics:read" | "tokens:manage")[];
            /**
             * @description Computed: revoked wins over expired
             * @example active
             * @enum {string}
             */
            status: "active" | "revoked" | "expired";
        };
        TokenListResponseDto: {
            /** @example true */
            ok: boolean;
            /** @description Newest first */
            tokens: components["schemas"]["TokenDto"][];
        };
        TokenResponseDto: {
            /** @example true */
            ok: boolean;
            token: components["schemas"]["TokenDto"];
        };
        UpdateMemoryDto: {
            /** @description "" clears the agent */
            agent?: string | null;
            /** @description Cannot be emptied: 1 byte to 1 MiB of UTF-8, not only whitespace */
            content?: string | null;
            /** @description "" clears the project */
            project?: string | null;
            /** @enum {string|null} */
            scope?: "global" | "project" | "agent" | "user" | null;
            /**
             * @description At most 20 ids of stored memories (not this one); an id that does not exist is refused (422) and nothing is written
             * @example []
             */
            supersedes?: string[] | null;
            /** @description [] clears the tags; each at most 64 characters (surrounding spaces count, then are trimmed) */
            tags?: string[] | null;
            /** @description "" clears the title */
            title?: string | null;
            /** @enum {string|null} */
            type?: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation" | null;
        };
        UpdateTokenDto: {
            /**
             * @description Replace the allow-list; [] allows any address again.
             * @example [
             *       "10.0.0.0/8"
             *     ]
             */
            allowed_ips?: string[] | null;
            /**
             * @description Remove the expiry (the token no longer expires).
             * @default false
             */
            clear_expiry?: boolean | null;
            /**
             * @description Unix epoch seconds
             * @example 1798761600
             */
            expires_at?: number | null;
            /** @example renamed agent */
            name?: string | null;
            /**
             * @description Namespaces the token may work in: names (acme/alice), prefixes (acme/*) or * (all, admin only). Default on create: ["default"] (by a tokens:manage token: its own). A tokens:manage token may grant only namespaces inside its own
             * @example [
             *       "acme/alice"
             *     ]
             */
            namespaces?: string[] | null;
            /**
             * @description Requests per minute this token may send; 0 = unlimited. Absent: the service default (MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE, 600).
             * @example 600
             */
            rate_limit_per_minute?: number | null;
            /**
             * @example [
             *       "memory:read"
             *     ]
             */
            scopes?: ("memory:read" | "memory:write" | "memory:delete" | "metrics:read" | "tokens:manage")[] | null;
            /**
             * @description Restore a revoked token.
             * @default false
             */
            unrevoke?: boolean | null;
        };
        /** @description CONTRACT §1 validation error: a one-line summary and pydantic-style details */
        ValidationErrorResponse: {
            detail: {
                ctx?: {
                    [key: string]: unknown;
                };
                /** @description The offending value (null when large) */
                input?: unknown;
                /**
                 * @example [
                 *       "query",
                 *       "limit"
                 *     ]
                 */
                loc: (string | number)[];
                /** @example Input should be less than or equal to 200 */
                msg: string;
                /** @example less_than_equal */
                type: string;
            }[];
            /** @example Invalid request: query.limit: Input should be less than or equal to 200 */
            error: string;
            /**
             * @example false
             * @enum {boolean}
             */
            ok: false;
        };
        VersionDto: {
            author: components["schemas"]["AuthorDto"] | null;
            /**
             * @description Whether this is the memory's current version.
             * @example false
             */
            current: boolean;
            /**
             * @description Bytes of content (UTF-8).
             * @example 412
             */
            size: number;
            /** @example Deployment policy */
            title: string | null;
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /** @example 3 */
            version: number;
        };
        VersionListResponseDto: {
            /** @example 1 */
            count: number;
            /** @example 1 */
            current_version: number;
            /** @example false */
            has_next: boolean;
            /** @example true */
            ok: boolean;
            /** @example 1 */
            page: number;
            /** @example 20 */
            page_size: number;
            /** @description Newest first. */
            rows: components["schemas"]["VersionDto"][];
            /**
             * @description Versions kept (at most the memory_history_keep setting, default 20).
             * @example 1
             */
            total: number;
        };
        VersionResponseDto: {
            /** @description The memory as it was at that version. */
            memory: components["schemas"]["MemoryDto"];
            /** @example true */
            ok: boolean;
            version: components["schemas"]["VersionDto"];
        };
        WrittenMemoryDto: {
            agent?: string | null;
            content?: string;
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /** @example 6740a1b2c3d4e5f601234567 */
            id: string;
            project?: string | null;
            /** @enum {string} */
            scope?: "global" | "project" | "agent" | "user";
            tags?: string[];
            title?: string | null;
            /** @enum {string} */
            type?: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation";
            /**
             * Format: date-time
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /** @example 2 */
            version: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getAdminPage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The admin page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    changeAdminPassword: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ChangePasswordDto"];
            };
        };
        responses: {
            /** @description Changed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChangePasswordResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /**
             * @description The current password is wrong
             *
             *     API tokens cannot use admin routes
             */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The environment sets the admin password */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The new password is too short, too long or the same as the current one */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    listAuditEntries: {
        parameters: {
            query?: {
                /** @description Only this action */
                action?: "admin.login" | "admin.logout" | "admin.password_change" | "token.refused" | "memory.export" | "backend.migrate" | "token.create" | "token.update" | "token.revoke" | "token.delete" | "settings.update" | "backend.test" | "memory.delete" | "memory.bulk_delete" | "memory.import" | "memory.restore" | "namespace.purge";
                /** @description Only this actor: a token id, or the admin username */
                actor?: string;
                /** @description next_cursor of the previous page */
                cursor?: string;
                /** @description Page size (default 50). */
                limit?: number;
                /** @description Only entries at or after this time (ISO 8601) */
                since?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditListResponseDto"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Bad limit, cursor, action or since */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getConfig: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConfigResponseDto"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    saveConfig: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SaveConfigDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SaveConfigResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A value has the wrong type or format */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getConfigPath: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConfigPathResponseDto"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getRawConfig: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RawConfigResponseDto"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    deriveEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DeriveEndpointDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeriveEndpointResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Neither an account id nor an endpoint, or an invalid one */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    exportMemories: {
        parameters: {
            query?: {
                /** @description Only memories of this agent. */
                agent?: string;
                /** @description Only memories created in the last N days (N ≥ 1). */
                days?: number;
                /** @description Only memories of this project. */
                project?: string;
                scope?: "global" | "project" | "agent" | "user";
                /** @description An ISO-8601 date or date-time that exists (2026-02-31 is refused) */
                since?: string;
                /** @description Only memories carrying this tag; repeat the parameter (at most 50 times) to require several tags. */
                tag?: string[];
                type?: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The archive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/zip": string;
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getGuide: {
        parameters: {
            query?: {
                /** @description json: a JSON envelope; markdown: the guide itself as text/markdown. Without it, `Accept: text/markdown` (preferred over application/json) also gives markdown. */
                format?: "json" | "markdown";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The guide (JSON envelope or markdown) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GuideResponseDto"];
                    "text/markdown": string;
                };
            };
            /** @description Unknown format */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthResponseDto"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    importMemories: {
        parameters: {
            query?: {
                /** @description Report what would happen without writing anything. */
                dry_run?: boolean;
                /** @description The uploaded file's name (title of a single markdown note without a heading; names JSONL lines in the report). */
                filename?: string;
                /** @description auto: a zip by its signature, JSONL by a leading `{` or a .jsonl name, else one markdown file. */
                format?: "auto" | "zip" | "jsonl" | "markdown";
                /** @description What to do with a memory whose id exists with different content: keep it, overwrite it, or import under a new id. */
                on_conflict?: "skip" | "overwrite" | "new_id";
                /** @description true: answer with NDJSON, one line per file as it is imported, then the report. */
                progress?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description The file itself (not empty) */
        requestBody: {
            content: {
                "application/jsonl": string;
                "application/octet-stream": string;
                "application/x-ndjson": string;
                "application/zip": string;
                "text/markdown": string;
                "text/plain": string;
            };
        };
        responses: {
            /** @description The report (progress=true: NDJSON lines `{"type":"item",…}` then `{"type":"report",…}`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportReportDto"];
                    "application/x-ndjson": components["schemas"]["ImportReportDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:write or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values; or: an upload over MEMSTORE_IMPORT_MAX_BYTES, an archive over the item, unpacked-size or compression-ratio limits, or an import stopped after MEMSTORE_IMPORT_MAX_SECONDS */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema); or: a body that is not the file its format names (a `format=zip` body that is not a readable zip archive, for one) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry; or: this token runs as many imports as MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN allows */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it; or: as many imports as MEMSTORE_IMPORT_CONCURRENT allows are running, or the temp directory for uploads cannot be written */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    login: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LoginDto"];
            };
        };
        responses: {
            /** @description Signed in */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LoginResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Wrong username or password */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A cross-site request relying on the session cookie */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many failed attempts from this address (Retry-After says when to retry) */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    logout: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Signed out (also when there was no session) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogoutResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A cross-site request relying on the session cookie */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getMe: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MeResponseDto"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    listMemories: {
        parameters: {
            query?: {
                /** @description `next_cursor` of a previous page; list mode only: with `q` it is refused (422). */
                after?: string;
                /** @description Only memories of this agent. */
                agent?: string;
                /** @description An ISO-8601 date or date-time that exists */
                as_of?: string;
                /** @description Only memories created in the last N days (N ≥ 1). */
                days?: number;
                /** @description Search only: each row also carries `explain`, the signals that placed it (matched words, cosine, keyword score, neighbour boost, final score, the floor). */
                explain?: boolean;
                /** @description Also memories that a newer one superseded (decision 0130); by default they are left out. */
                include_superseded?: boolean;
                /** @description Page size, 1 to 200. */
                limit?: number;
                /**
                 * @description Semantic and hybrid search: the relevance floor, 0..1 (default 0.4). Rows scoring below it
                 *     are not answers: a search that nothing answers returns no rows, and `total` counts only rows
                 *     at or above the floor. 0 keeps every candidate; keyword mode ignores it (it has no floor).
                 */
                min_score?: number;
                /**
                 * @description Search only: `hybrid` (default; full-text and meaning fused), `keyword` (full-text only) or
                 *     `semantic` (meaning only). Without an embedding model every search is keyword
                 *     (`search_mode` in the answer says which ran).
                 */
                mode?: "hybrid" | "keyword" | "semantic";
                /** @description 1-based page (offset mode). */
                page?: number;
                /** @description Only memories of this project. */
                project?: string;
                /** @description Full-text query; empty means the newest-first list. `"a phrase"` must match as a phrase, `-word` excludes. */
                q?: string;
                /** @description Search only: when the question is asked, an ISO-8601 date or date-time that exists (default now). Times in q ("last week", "in May") are read from it. */
                query_date?: string;
                scope?: "global" | "project" | "agent" | "user";
                /** @description An ISO-8601 date or date-time that exists (2026-02-31 is refused) */
                since?: string;
                /** @description Absolute offset; overrides page. */
                skip?: number;
                /** @description Only memories carrying this tag; repeat the parameter (at most 50 times) to require several tags. */
                tag?: string[];
                type?: "note" | "fact" | "decision" | "task" | "preference" | "reference" | "code" | "conversation";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryListResponseDto"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema); or: `after` is taken only in list mode (without `q`) and must be a `next_cursor` this service issued */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    createMemory: {
        parameters: {
            query?: never;
            header?: {
                /** @description Same key + same body within 24 h replays the first response (header Idempotent-Replayed: true); same key + another body → 422 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateMemoryDto"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedMemoryResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:write or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema); or: an Idempotency-Key already used (within 24 h, by this caller) with another body (`idempotency_key_reused`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getMemory: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found (also for an id that is not 24 lowercase hex characters) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    deleteMemory: {
        parameters: {
            query?: never;
            header?: {
                /** @description The strong ETag of the version the change is based on (e.g. "3"), or *. Another current version → 412 with current_version; a weak tag (W/"3") never matches (RFC 9110 strong comparison) → 412 */
                "If-Match"?: string;
            };
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeleteMemoryResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:delete or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found (also for an id that is not 24 lowercase hex characters) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description If-Match does not name the current version; the body has current_version; or: If-Match names a version that is not the current one; a weak tag (W/"3") never matches (RFC 9110 §13.1.1 compares strongly) */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    updateMemory: {
        parameters: {
            query?: never;
            header?: {
                /** @description The strong ETag of the version the change is based on (e.g. "3"), or *. Another current version → 412 with current_version; a weak tag (W/"3") never matches (RFC 9110 strong comparison) → 412 */
                "If-Match"?: string;
            };
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateMemoryDto"];
            };
        };
        responses: {
            /** @description The memory as written. A token without memory:read gets only id, version, created_at, updated_at and the fields it sent (decision 0050). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        memory: components["schemas"]["MemoryDto"] | components["schemas"]["WrittenMemoryDto"];
                        /** @example true */
                        ok: boolean;
                    };
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:write or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found (also for an id that is not 24 lowercase hex characters) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description If-Match does not name the current version; the body has current_version; or: If-Match names a version that is not the current one; a weak tag (W/"3") never matches (RFC 9110 §13.1.1 compares strongly) */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    downloadMemory: {
        parameters: {
            query?: {
                /** @description false: the markdown file; true: a time-limited URL that works without a token. */
                url?: boolean;
            };
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The markdown file (url=false) or a signed URL (url=true) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DownloadUrlResponseDto"];
                    "text/markdown": string;
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found (also for an id that is not 24 lowercase hex characters) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    listMemoryVersions: {
        parameters: {
            query?: {
                limit?: number;
                /** @description 1-based page. */
                page?: number;
            };
            header?: never;
            path: {
                memory_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VersionListResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found (also for an id that is not 24 lowercase hex characters) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getMemoryVersion: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                memory_id: string;
                /** @description A kept version number */
                version: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VersionResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found, or that version is not kept */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    restoreMemoryVersion: {
        parameters: {
            query?: never;
            header?: {
                /** @description The strong ETag of the version the change is based on (e.g. "3"), or *. Another current version → 412 with current_version; a weak tag (W/"3") never matches (RFC 9110 strong comparison) → 412 */
                "If-Match"?: string;
            };
            path: {
                memory_id: string;
                /** @description A kept version number */
                version: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The memory as written. A token without memory:read gets only id, version, created_at, updated_at and the fields it sent (decision 0050). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        memory: components["schemas"]["MemoryDto"] | components["schemas"]["WrittenMemoryDto"];
                        /** @example true */
                        ok: boolean;
                    };
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:write or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Memory not found, or that version is not kept */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description If-Match does not name the current version; the body has current_version; or: If-Match names a version that is not the current one; a weak tag (W/"3") never matches (RFC 9110 §13.1.1 compares strongly) */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    bulkDeleteMemories: {
        parameters: {
            query?: never;
            header?: {
                /** @description Same key + same body within 24 h replays the first response (header Idempotent-Replayed: true); same key + another body → 422 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkDeleteDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkDeleteResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:delete or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema); or: an Idempotency-Key already used (within 24 h, by this caller) with another body (`idempotency_key_reused`) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getMigration: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    startMigration: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Nothing to copy (the backends have not changed), or a copy is already running */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    listNamespaces: {
        parameters: {
            query?: {
                after?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NamespaceListResponseDto"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    purgeNamespace: {
        parameters: {
            query?: never;
            header: {
                /** @description The namespace to purge, named explicitly (a `namespace` body field does the same); outside the caller's namespaces: 403 */
                "X-Memory-Namespace": string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PurgeNamespaceDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PurgeReceiptDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:delete or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready to serve */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReadyResponseDto"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getSettingsSchema: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SchemaResponseDto"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getSkillPack: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The zip archive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/zip": string;
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getSkillPrompt: {
        parameters: {
            query?: {
                /** @description json: a JSON envelope; text or markdown: the prompt itself as text/markdown. */
                format?: "json" | "text" | "markdown";
                /** @description Name of the environment variable the prompt tells the model to read the token from. */
                token_env?: string;
                /** @description Alias of token_env (token_env wins when both are given). */
                token_placeholder?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The prompt (JSON envelope or markdown) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SkillPromptResponseDto"];
                    "text/markdown": string;
                };
            };
            /** @description Unknown format, or a token_env that is not an environment variable name */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getStats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatsResponseDto"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope memory:read or the client address is not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getStatus: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatusResponseDto"];
                };
            };
            /** @description Missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The token lacks a scope, is used from an address outside its allow-list, or names a namespace outside its binding */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    testBackends: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TestBackendsDto"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestBackendsResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description API tokens cannot use admin routes */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown target */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    listTokens: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Token records, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenListResponseDto"];
                };
            };
            /** @description Not signed in, or a missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    createToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateTokenDto"];
            };
        };
        responses: {
            /** @description The new token record and its plaintext (shown only here) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedTokenResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in, or a missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown scope or preset, both expiry fields, a past expires_at, an invalid allowed_ips or namespaces entry */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    deleteToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description 16 lowercase hex characters */
                token_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenDeletedResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in, or a missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token not found (or, for a tokens:manage token, outside its namespaces) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    updateToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description 16 lowercase hex characters */
                token_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateTokenDto"];
            };
        };
        responses: {
            /** @description The token record */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in, or a missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token not found (or, for a tokens:manage token, outside its namespaces) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    revokeToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description 16 lowercase hex characters */
                token_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The token record */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenResponseDto"];
                };
            };
            /** @description A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Not signed in, or a missing, invalid, expired or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token not found (or, for a tokens:manage token, outside its namespaces) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Body over the byte limit (2 MiB by default), nested deeper than 32 levels, more than 1000 keys in one object or more than 10000 values */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8 */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Validation error (malformed JSON, a value outside the rules of the schema) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format 0.0.4 */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No credentials, and the client address is not in MEMSTORE_METRICS_ALLOWED_IPS */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Token lacks scope metrics:read or the client address is not allowed for it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry */
            429: {
                headers: {
                    /** @description Token limits: the token's requests per window (IETF draft) */
                    "RateLimit-Limit"?: number;
                    /** @description Token limits: requests left in the current window */
                    "RateLimit-Remaining"?: number;
                    /** @description Token limits: seconds until the window ends */
                    "RateLimit-Reset"?: number;
                    /** @description Seconds until a request will be accepted again */
                    "Retry-After": number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description The request line and headers together are larger than 16 KB: shorten the query string (or the cookies) */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
            /** @description A backend is down or misconfigured; the error names it */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorResponse"];
                };
            };
        };
    };
}
