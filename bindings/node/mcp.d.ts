// Declarations of mcp.js (`lro-wasm/mcp`), written by hand: the library's own are generated into
// gen/lro.d.ts.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { ConfigInput, Lro } from './gen/lro.js';

/**
 * withLro's options: any of the spec's `[prompt.offload]` keys (docs/CONFIGURATION.md), which win
 * over the environment and the file, and three of its own.
 */
export interface LroMcpOptions extends ConfigInput {
  /**
   * A TOML file whose `[prompt.offload]` and `[prompt.offload.tools.NAME]` tables configure lro,
   * below the environment and the options.
   */
  configFile?: string | null;
  /** Where the `ATLATL_PROMPT__OFFLOAD__*` variables are read (default: `process.env`). */
  env?: Record<string, string | undefined>;
  /** The Lro to call (for events and limits: `new Lro({ onEvent })`); default: one shared per process. */
  lro?: Lro | null;
}

/**
 * Adds lro to an McpServer (or a low-level Server) and returns it: `lro_extract` listed and
 * answered, every tool result through the component's `intercept` (forwarded unchanged when that
 * fails), `outputSchema` dropped from tools whose results may be offloaded, expired files swept
 * at start and every ttl/2 (1 s to 1 h). Throws an `LroError` of kind `invalid-config` naming the
 * key and where it came from.
 */
export declare function withLro<T extends McpServer | Server>(server: T, options?: LroMcpOptions): T;

/** withLro for a low-level Server. */
export declare function withLroServer<T extends Server>(server: T, options?: LroMcpOptions): T;

/** Options of loadConfig. */
export interface LoadConfigOptions {
  /** The spec's keys (and `tools` as a list of `{name, ...}`): the highest layer. */
  options?: object | null;
  /** Read for the `ATLATL_PROMPT__OFFLOAD__*` variables (default: `process.env`). */
  env?: Record<string, string | undefined>;
  /** A TOML file with a `[prompt.offload]` table: below the environment. */
  configFile?: string | null;
  /** The lowest layer, above the component's defaults (withLro uses `{extract_tool: true}`). */
  base?: ConfigInput;
  /** What the options are called in error messages (default `options`). */
  source?: string;
  /** Keys of `options` that are not configuration, skipped rather than refused. */
  others?: string[];
}

/**
 * The configuration layered as the `lro` command layers it: options > environment > file > base;
 * the keys no layer sets are left out, for the component's defaults. Throws an `LroError` of kind
 * `invalid-config` naming the key and where it came from.
 */
export declare function loadConfig(options?: LoadConfigOptions): ConfigInput;

/** The `[prompt.offload]` keys besides `tools`. */
export declare const KEYS: readonly string[];
/** The keys of a `[prompt.offload.tools.NAME]` table. */
export declare const TOOL_KEYS: readonly string[];
/** The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS` for `threshold_tokens`. */
export declare function envVar(key: string): string;
/** Milliseconds between sweeps for a time to live in seconds: half of it, from 1 s to 1 h. */
export declare function sweepInterval(ttlSeconds: number | bigint): number;
