// Types of openapi-files.mjs, for the tests that import it.
export declare const DESCRIPTION_FILE: string;
export declare const TYPES_FILE: string;
export declare const REDOCLY_CLI: string;
export declare const REDOCLY_ENV: Record<string, string>;
export declare const STALE: string;
export declare const ROOT: string;
export declare function renderDescription(document: unknown): string;
export declare function renderTypes(document: unknown): Promise<string>;
export declare function committed(file: string): string;
