// Declarations of mcp.js (`lro-wasm/mcp`), written by hand: the library's own are generated into
// gen/lro.d.ts.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Config, ConfigInput, ConfigLayersInput, Lro } from './gen/lro.js';

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
 * Adds lro to an McpServer (or a low-level Server) and resolves to it: `lro_extract` listed and
 * answered, every tool result through the component's `intercept` (forwarded unchanged when that
 * fails), `outputSchema` dropped from tools whose results may be offloaded, expired files swept
 * at start and every ttl/2 (1 s to 1 h). Rejects with an `LroError` of kind `invalid-config`
 * naming the key and where it came from.
 */
export declare function withLro<T extends McpServer | Server>(server: T, options?: LroMcpOptions): Promise<T>;

/** withLro for a low-level Server. */
export declare function withLroServer<T extends Server>(server: T, options?: LroMcpOptions): Promise<T>;

/** What configLayers gathers. */
export interface GatherOptions {
  /**
   * The spec's keys (and `tools` as a list of `{name, ...}` or an object of tool names to
   * settings): the highest layer. `null` or `undefined` values set nothing.
   */
  options?: object | null;
  /** Read for the `ATLATL_PROMPT__OFFLOAD__*` variables (default: `process.env`). */
  env?: Record<string, string | undefined>;
  /** A TOML file with a `[prompt.offload]` table: below the environment. */
  configFile?: string | null;
  /** What the options are called in error messages (default `options`). */
  source?: string;
  /** Keys of `options` that are not configuration, skipped rather than refused. */
  others?: string[];
}

/** Options of loadConfig. */
export interface LoadConfigOptions extends GatherOptions {
  /** The lowest layer, above the component's defaults (withLro uses `{extract_tool: true}`). */
  base?: ConfigInput;
}

/**
 * The layers `lro.load` takes (WIT `config-layers`): the file's text, the
 * `ATLATL_PROMPT__OFFLOAD__*` variables of `env`, and the options as JSON. Throws an `LroError`
 * of kind `invalid-config` when the file cannot be read or the options are not an object.
 */
export declare function configLayers(options?: GatherOptions): ConfigLayersInput;

/**
 * The configuration layered by `lro`'s component as the `lro` command layers it: options >
 * environment > file > base > the component's defaults; the whole config. Rejects with an
 * `LroError` of kind `invalid-config` naming the key and where it came from.
 */
export declare function loadConfig(lro: Lro, options?: LoadConfigOptions): Promise<Config>;

/** What every configuration variable's name starts with: `ATLATL_PROMPT__OFFLOAD__`. */
export declare const ENV_PREFIX: string;
/** The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS` for `threshold_tokens`. */
export declare function envVar(key: string): string;
/** Milliseconds between sweeps for a time to live in seconds: half of it, from 1 s to 1 h. */
export declare function sweepInterval(ttlSeconds: number | bigint): number;
