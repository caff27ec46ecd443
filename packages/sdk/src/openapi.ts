// Generated from the API's OpenAPI document by src/generate.ts (openapi-typescript). Do not edit.
/* eslint-disable */

export interface paths {
    "/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List jobs, newest first (cursor pagination) */
        get: operations["listJobs"];
        put?: never;
        /** Create a job */
        post: operations["createJob"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read a job */
        get: operations["getJob"];
        put?: never;
        post?: never;
        /** Delete a job: its ZIPs, and every download link of it at once */
        delete: operations["deleteJob"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Retry a failed job */
        post: operations["retryJob"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/jobs/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Count the user's jobs by status */
        get: operations["jobStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/download/{token}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a ZIP (signed link; Range and If-Range supported)
         * @description Needs no API key: the signed token in `download_url` authorises it. A single byte range (`Range: bytes=start-end`, `bytes=start-`, `bytes=-suffix`) is answered with 206 and `Content-Range`; with `If-Range` (the ETag, or the Last-Modified date) the range applies only while the ZIP is unchanged, otherwise the whole ZIP comes with 200. Multiple ranges and malformed ones are answered with the whole ZIP; a range starting past the end with 416. HEAD answers the same headers without a body.
         */
        get: operations["downloadZip"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List webhooks (without secrets) */
        get: operations["listWebhooks"];
        put?: never;
        /** Create a webhook (the secret is shown once) */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a webhook */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Rotate a webhook's secret (both sign for 24 h) */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A webhook's deliveries, newest first */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/sources": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List sources (without secrets) */
        get: operations["listSources"];
        put?: never;
        /** Store an S3 bucket's credentials (the secret is never shown again) */
        post: operations["createSource"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/sources/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a source; later reads of its objects fail with "source deleted" */
        delete: operations["deleteSource"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List API keys (without the secret) */
        get: operations["listApiKeys"];
        put?: never;
        /** Create an API key (the secret is shown once) */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke an API key */
        delete: operations["revokeApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This month's usage against the plan */
        get: operations["getUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/auth/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Log in (dashboard session) */
        post: operations["login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This OpenAPI 3.1 document */
        get: operations["openApiDocument"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The reference page of this document (HTML) */
        get: operations["referencePage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/{asset}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A script or style sheet of the reference page */
        get: operations["referencePageAsset"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness (Postgres, Redis, S3 reachable) */
        get: operations["readiness"];
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
        ApiKey: {
            /** Format: uuid */
            id: string;
            /** @description label, at most 255 characters (empty when none was given) */
            name: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            created_at: string;
            /** @description null: no expiry */
            expires_at: string | null;
            /** @description null: never used */
            last_used_at: string | null;
        };
        CreatedApiKey: {
            /** Format: uuid */
            id: string;
            /** @description label, at most 255 characters (empty when none was given) */
            name: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            created_at: string;
            /** @description null: no expiry */
            expires_at: string | null;
            /** @description null: never used */
            last_used_at: string | null;
            /**
             * Format: starts_with
             * @description the secret value, shown only in this response
             */
            key: string;
        };
        /** @description WinZip AES-256 (AE-2) for every entry; the password is stored encrypted and never returned */
        Encryption: {
            /** @enum {string} */
            method: "aes-256";
            password: string;
        };
        EncryptionView: {
            /** @enum {string} */
            method: "aes-256";
        };
        ErrorEntry: {
            url: string;
            error: string;
        };
        FileEntry: {
            url: string;
            /** @description null when not supplied */
            filename: string | null;
            /** @description names of the request headers given (lower case, sorted); their values are never shown */
            header_names?: string[];
        };
        Job: {
            /** Format: uuid */
            id: string;
            /** @enum {string} */
            status: "preparing" | "pending" | "processing" | "completed" | "failed";
            url_count: number;
            file_count: number;
            /** @description legacy; for split jobs the first bin's filename */
            zip_filename: string;
            /** @description legacy; null for split jobs */
            zip_size: number | null;
            fail_on_url_error: boolean;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            created_at: string;
            /** @description null until the job is completed or failed */
            completed_at: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            expires_at: string;
            multi_zip: boolean;
            max_zip_size_bytes: number | null;
            zip_count: number;
            /** @description bytes across all ZIPs */
            total_size: number;
            /**
             * @description the archive format: "zip", "tar" or "tar.gz"
             * @enum {string}
             */
            format: "zip" | "tar" | "tar.gz";
            files: components["schemas"]["FileEntry"][];
            /** @description legacy; null for split jobs, and unless completed and not expired */
            download_url: string | null;
            metadata: {
                [key: string]: string;
            } | null;
            /** @enum {string} */
            split_strategy: "preserve-order" | "ffd";
            fail_on_zip_error: boolean;
            /** @enum {string} */
            compression: "store" | "deflate";
            /** @description the deflate or gzip level; null unless compression is "deflate" or format "tar.gz" */
            compression_level: number | null;
            /** @description the method only; the password is never returned */
            encryption: components["schemas"]["EncryptionView"] | null;
            /** @description the empty folders asked for */
            folders: string[];
            /** @description the archive ends with manifest.csv */
            manifest: boolean;
            zips: components["schemas"]["Zip"][];
            /** @description only when applicable */
            errors?: components["schemas"]["ErrorEntry"][];
            /** @description sum of `bytes_done` over sum of `expected_size`, 0 to 1 (3 decimals); 1 when completed; null when a size is unknown */
            progress: number | null;
        };
        JobListItem: {
            /** Format: uuid */
            id: string;
            /** @enum {string} */
            status: "preparing" | "pending" | "processing" | "completed" | "failed";
            url_count: number;
            file_count: number;
            /** @description legacy; for split jobs the first bin's filename */
            zip_filename: string;
            /** @description legacy; null for split jobs */
            zip_size: number | null;
            fail_on_url_error: boolean;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            created_at: string;
            /** @description null until the job is completed or failed */
            completed_at: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC date and time
             */
            expires_at: string;
            multi_zip: boolean;
            max_zip_size_bytes: number | null;
            zip_count: number;
            /** @description bytes across all ZIPs */
            total_size: number;
            /**
             * @description the archive format: "zip", "tar" or "tar.gz"
             * @enum {string}
             */
            format: "zip" | "tar" | "tar.gz";
            /** @description sum of `bytes_done` over sum of `expected_size`, 0 to 1 (3 decimals); 1 when completed; null when a size is unknown */
            progress: number | null;
        };
        PaginationMeta: {
            limit: number;
            total: number;
            /** @description opaque; pass it as `cursor` for the next page; null when has_more is false */
            next_cursor: string | null;
            has_more: boolean;
        };
        /** @description a source; its secret access key is never returned */
        Source: {
            /** Format: uuid */
            id: string;
            name: string;
            /** @constant */
            type: "s3";
            region: string;
            /** @description null: AWS S3 of `region` */
            endpoint: string | null;
            force_path_style: boolean;
            access_key_id: string;
            created_at: string;
        };
        Zip: {
            /** Format: starts_with */
            id: string;
            /** @description 1-indexed bin number */
            sequence: number;
            /** @enum {string} */
            status: "pending" | "processing" | "completed" | "failed";
            filename: string;
            file_count: number;
            /** @description final size in bytes; null until the ZIP is completed */
            size: number | null;
            /** @description signed URL; null unless the ZIP is completed and the job not expired */
            download_url: string | null;
            /** @description per-bin errors; only when there are some */
            errors?: components["schemas"]["ErrorEntry"][];
            /** @description bytes of this ZIP written so far: its size when completed, 0 while pending and for stream jobs */
            bytes_done: number;
            /** @description the predicted final size, or null when unknown */
            expected_size: number | null;
            /** @description jobs with a destination only: s3://<bucket>/<key> of the ZIP, null until it is completed */
            location?: string | null;
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
    listJobs: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
                status?: "pending" | "processing" | "completed" | "failed";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a page of jobs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        jobs: components["schemas"]["JobListItem"][];
                        meta: components["schemas"]["PaginationMeta"];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    createJob: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    files: {
                        url: string;
                        filename?: string | null;
                        headers?: {
                            [key: string]: string;
                        };
                        source?: string;
                    }[];
                    /**
                     * @default stored
                     * @enum {string}
                     */
                    mode?: "stored" | "stream";
                    zip_filename?: string | null;
                    /**
                     * @description retention in seconds; at most the plan's maximum
                     * @default 86400
                     */
                    expires_in?: number;
                    /** @default true */
                    fail_on_url_error?: boolean;
                    metadata?: {
                        [key: string]: string;
                    } | null;
                    max_zip_size_bytes?: number | null;
                    /**
                     * @default preserve-order
                     * @enum {string}
                     */
                    split_strategy?: "preserve-order" | "ffd";
                    /** @default true */
                    allow_oversize_zips?: boolean;
                    /** @default true */
                    fail_on_zip_error?: boolean;
                    /**
                     * @default store
                     * @enum {string}
                     */
                    compression?: "store" | "deflate";
                    compression_level?: number | null;
                    encryption?: components["schemas"]["Encryption"] | null;
                    /**
                     * @default zip
                     * @enum {string}
                     */
                    format?: "zip" | "tar" | "tar.gz";
                    /** @description empty folders to include, like "reports/2025/"; counted with files against the plan's files per job */
                    folders?: string[];
                    /**
                     * @description adds manifest.csv (name,size,sha256,url,error) as the last entry; stored mode only
                     * @default false
                     */
                    manifest?: boolean;
                    destination?: {
                        source: string;
                        bucket: string;
                        prefix?: string;
                    };
                };
            };
        };
        responses: {
            /** @description created; poll GET /jobs/{id} */
            201: {
                headers: {
                    /** @description `true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again) */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        /** Format: uuid */
                        job_id: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description refused: PLAN_LIMIT_EXCEEDED, QUOTA_EXCEEDED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "PLAN_LIMIT_EXCEEDED" | "QUOTA_EXCEEDED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_IN_USE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_IN_USE";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_REUSED */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_REUSED";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    getJob: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description job id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the job, with its ZIPs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        job: components["schemas"]["Job"];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    deleteJob: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description job id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted; the job and its download links answer 404 from now on */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        message: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    retryJob: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description job id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @default true */
                    from_checkpoint?: boolean;
                };
            };
        };
        responses: {
            /** @description queued again */
            200: {
                headers: {
                    /** @description `true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again) */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        /** Format: uuid */
                        job_id: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_IN_USE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_IN_USE";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_REUSED */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_REUSED";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    jobStats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description jobs by status */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        stats: {
                            total: number;
                            preparing: number;
                            pending: number;
                            processing: number;
                            completed: number;
                            failed: number;
                        };
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    downloadZip: {
        parameters: {
            query?: never;
            header?: {
                /** @description one byte range, e.g. `bytes=1048576-` */
                Range?: string;
                /** @description the ETag (or Last-Modified date) of the bytes already held */
                "If-Range"?: string;
                /** @description an ETag; 304 when it matches and no range is asked for */
                "If-None-Match"?: string;
            };
            path: {
                /** @description signed download token (from `download_url`) */
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the whole archive (application/zip, application/x-tar or application/gzip by the job's format) */
            200: {
                headers: {
                    /** @description bytes in this response body */
                    "Content-Length"?: number;
                    /** @description attachment; the ZIP's filename (ASCII fallback and UTF-8 `filename*`) */
                    "Content-Disposition"?: string;
                    /** @description strong validator of the ZIP's bytes; send it back in `If-Range` to resume */
                    ETag?: string;
                    /** @description when the ZIP was completed */
                    "Last-Modified"?: string;
                    /** @description `bytes` */
                    "Accept-Ranges"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/zip": string;
                    "application/x-tar": string;
                    "application/gzip": string;
                };
            };
            /** @description the requested byte range of the archive */
            206: {
                headers: {
                    /** @description bytes in this response body */
                    "Content-Length"?: number;
                    /** @description attachment; the ZIP's filename (ASCII fallback and UTF-8 `filename*`) */
                    "Content-Disposition"?: string;
                    /** @description strong validator of the ZIP's bytes; send it back in `If-Range` to resume */
                    ETag?: string;
                    /** @description when the ZIP was completed */
                    "Last-Modified"?: string;
                    /** @description `bytes` */
                    "Accept-Ranges"?: string;
                    /** @description `bytes start-end/size` */
                    "Content-Range"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/zip": string;
                    "application/x-tar": string;
                    "application/gzip": string;
                };
            };
            /** @description not modified (If-None-Match matched) */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description refused: INVALID_TOKEN, EXPIRED_TOKEN, QUOTA_EXCEEDED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_TOKEN" | "EXPIRED_TOKEN" | "QUOTA_EXCEEDED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description range not satisfiable (`Content-Range: bytes *\/size`): INVALID_REQUEST */
            416: {
                headers: {
                    /** @description `bytes *\/size` */
                    "Content-Range"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
            /** @description a source file could not be fetched while streaming: SOURCE_UNAVAILABLE */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "SOURCE_UNAVAILABLE";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the user's webhooks */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        webhooks: {
                            /** Format: uuid */
                            id: string;
                            url: string;
                            events: ("job.completed" | "job.failed" | "download.completed")[];
                            description: string | null;
                            /** Format: date-time */
                            created_at: string;
                        }[];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    url: string;
                    /**
                     * @default [
                     *       "job.completed",
                     *       "job.failed"
                     *     ]
                     */
                    events?: ("job.completed" | "job.failed" | "download.completed")[];
                    description?: string | null;
                };
            };
        };
        responses: {
            /** @description the webhook, with `secret` (shown only here and on rotation) */
            201: {
                headers: {
                    /** @description `true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again) */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        webhook: {
                            /** Format: uuid */
                            id: string;
                            url: string;
                            events: ("job.completed" | "job.failed" | "download.completed")[];
                            description: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: starts_with */
                            secret: string;
                        };
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description refused: PLAN_LIMIT_EXCEEDED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "PLAN_LIMIT_EXCEEDED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_IN_USE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_IN_USE";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_REUSED */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_REUSED";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description webhook id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted; nothing more is sent to it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        message: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description webhook id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the webhook with its new `secret` (shown only here) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        webhook: {
                            /** Format: uuid */
                            id: string;
                            url: string;
                            events: ("job.completed" | "job.failed" | "download.completed")[];
                            description: string | null;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: starts_with */
                            secret: string;
                        };
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path: {
                /** @description webhook id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a page of deliveries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        deliveries: {
                            /** Format: uuid */
                            id: string;
                            /** @enum {string} */
                            event: "job.completed" | "job.failed" | "download.completed";
                            /** Format: uuid */
                            job_id: string;
                            /** @enum {string} */
                            status: "pending" | "delivered" | "failed";
                            attempts: number;
                            last_status_code: number | null;
                            last_error: string | null;
                            next_attempt_at: string | null;
                            delivered_at: string | null;
                            /** Format: date-time */
                            created_at: string;
                        }[];
                        meta: {
                            limit: number;
                            total: number;
                            next_cursor: string | null;
                            has_more: boolean;
                        };
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    listSources: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the user's sources */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        sources: components["schemas"]["Source"][];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    createSource: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    /** @enum {string} */
                    type: "s3";
                    region: string;
                    access_key_id: string;
                    secret_access_key: string;
                    endpoint?: string | null;
                    /** @default false */
                    force_path_style?: boolean;
                };
            };
        };
        responses: {
            /** @description the source, without its secret */
            201: {
                headers: {
                    /** @description `true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again) */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        source: components["schemas"]["Source"];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description refused: PLAN_LIMIT_EXCEEDED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "PLAN_LIMIT_EXCEEDED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_IN_USE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_IN_USE";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_REUSED */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_REUSED";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    deleteSource: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description source id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        message: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    listApiKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the user's keys, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        api_keys: components["schemas"]["ApiKey"][];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 255 printable ASCII characters, unique per request you mean to make once; kept 24 hours per user. The same key with the same request replays the first answer; refused requests (4xx) are not kept. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    name?: string | null;
                    expires_at?: string | null;
                };
            };
        };
        responses: {
            /** @description the key, with `key` (shown only here) */
            201: {
                headers: {
                    /** @description `true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was created again) */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        api_key: components["schemas"]["CreatedApiKey"];
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description refused: PLAN_LIMIT_EXCEEDED */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "PLAN_LIMIT_EXCEEDED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_IN_USE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_IN_USE";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: IDEMPOTENCY_KEY_REUSED */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "IDEMPOTENCY_KEY_REUSED";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    revokeApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description API key id (UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description revoked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        message: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    getUsage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description usage for the current UTC month (1 GB = 10^9 bytes) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        usage: {
                            /** @enum {string} */
                            plan: "free" | "starter" | "pro" | "scale";
                            /** Format: date-time */
                            period_start: string;
                            /** Format: date-time */
                            period_end: string;
                            overage_enabled: boolean;
                            stream_bytes: number;
                            stream_quota_bytes: number;
                            stored_gb_days: number;
                            stored_quota_gb_days: number;
                        };
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
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
                "application/json": {
                    /** Format: email */
                    email: string;
                    password: string;
                };
            };
        };
        responses: {
            /** @description a session JWT for `Authorization: Bearer` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        /** @description session JWT (HS256, 12 h) */
                        token: string;
                    };
                };
            };
            /** @description invalid request (the message names each field and its problem): INVALID_REQUEST */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description missing, invalid, revoked or expired API key or session token: UNAUTHORIZED */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "UNAUTHORIZED";
                            message: string;
                        };
                    };
                };
            };
            /** @description request body larger than 10 MB: INVALID_REQUEST */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description unsupported request body encoding: INVALID_REQUEST */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description rate limited (`Retry-After` says when to retry): RATE_LIMITED */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "RATE_LIMITED";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    openApiDocument: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the OpenAPI document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    referencePage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description an HTML page rendering /openapi.json */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": unknown;
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    referencePageAsset: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description file name of the asset */
                asset: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the asset */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            /** @description not found (or another user's): NOT_FOUND */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "NOT_FOUND";
                            message: string;
                        };
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the API process is alive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: true;
                        /** @constant */
                        status: "ok";
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
        };
    };
    readiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description every dependency answers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        success: boolean;
                        /** @enum {string} */
                        status: "ready" | "unavailable";
                        failing: string[];
                    };
                };
            };
            /** @description error: INVALID_REQUEST */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INVALID_REQUEST";
                            message: string;
                        };
                    };
                };
            };
            /** @description internal error: INTERNAL_ERROR */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        success: false;
                        error: {
                            /** @enum {string} */
                            code: "INTERNAL_ERROR";
                            message: string;
                        };
                    };
                };
            };
            /** @description a dependency does not answer (named in `failing`) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        success: boolean;
                        /** @enum {string} */
                        status: "ready" | "unavailable";
                        failing: string[];
                    };
                };
            };
        };
    };
}
