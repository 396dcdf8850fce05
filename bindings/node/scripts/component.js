// Which component the build transpiles: $LRO_WASM when set, else the guest built from this
// repository by cargo, as host/build.rs builds it for the `lro` command (same command, same
// target directory, so a warm build is a no-op for both).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Thrown with a message that says what to do; build.js prints it and exits 1. */
export class ComponentError extends Error {}

/**
 * The path of the component: `env.LRO_WASM` if set (it must exist), else
 * `<repo>/target/guest/wasm32-wasip2/release/lro_guest.wasm` after
 * `cargo build -p lro-guest --target wasm32-wasip2 --release --target-dir <repo>/target/guest`
 * run in `repo` (`$CARGO_TARGET_DIR/guest` when that is set, as host/build.rs has it).
 */
export function findComponent(repo, env = process.env) {
  const given = env.LRO_WASM;
  if (given) {
    if (!existsSync(given)) {
      throw new ComponentError(`LRO_WASM=${given}: no such file (unset LRO_WASM to build the component from the repository with cargo)`);
    }
    return resolve(given);
  }
  const manifest = join(repo, 'guest', 'Cargo.toml');
  if (!existsSync(manifest)) {
    throw new ComponentError(`no component: LRO_WASM is not set, and ${repo} is not the lro repository (no guest/Cargo.toml) `
      + 'to build it from. Set LRO_WASM=/path/to/lro.wasm (`lro component -o /path/to/lro.wasm` writes one).');
  }
  const targetDir = join(env.CARGO_TARGET_DIR ? resolve(env.CARGO_TARGET_DIR) : join(repo, 'target'), 'guest');
  const args = ['build', '-p', 'lro-guest', '--target', 'wasm32-wasip2', '--release', '--target-dir', targetDir];
  const childEnv = { ...env };
  // As host/build.rs: flags and wrappers meant for another build must not reach the guest's,
  // but for clippy-driver when LRO_LINT_GUEST=1 asks for it (.ci/run's one linted guest build).
  for (const name of ['RUSTFLAGS', 'CARGO_ENCODED_RUSTFLAGS', 'RUSTC_WRAPPER', 'RUSTC_WORKSPACE_WRAPPER', 'CARGO_TARGET_DIR']) {
    if (name === 'RUSTC_WORKSPACE_WRAPPER' && env.LRO_LINT_GUEST === '1') continue;
    delete childEnv[name];
  }
  // As host/build.rs (remap_cargo_home): cargo's home reads `cargo` in the component's panic
  // locations, which a package would otherwise publish.
  childEnv.CARGO_ENCODED_RUSTFLAGS = `--remap-path-prefix=${env.CARGO_HOME ?? join(homedir(), '.cargo')}=cargo`;
  console.error(`LRO_WASM is not set: building the component (cargo ${args.join(' ')})`);
  // stdin closed: rustc probes the target by reading a program from stdin.
  const run = spawnSync('cargo', args, { cwd: repo, env: childEnv, stdio: ['ignore', 'inherit', 'inherit'] });
  if (run.error?.code === 'ENOENT') {
    throw new ComponentError('no component: LRO_WASM is not set, and cargo is not on PATH to build it. Install Rust '
      + '(https://rustup.rs) and run `rustup target add wasm32-wasip2`, or set LRO_WASM=/path/to/lro.wasm.');
  }
  if (run.error) throw new ComponentError(`cargo ${args.join(' ')}: ${run.error.message}`);
  if (run.status !== 0) {
    throw new ComponentError(`cargo ${args.join(' ')} failed (exit ${run.status ?? run.signal}); if the target is missing, `
      + 'run `rustup target add wasm32-wasip2`. Or set LRO_WASM=/path/to/lro.wasm.');
  }
  const built = join(targetDir, 'wasm32-wasip2', 'release', 'lro_guest.wasm');
  if (!existsSync(built)) throw new ComponentError(`cargo ${args.join(' ')} succeeded but wrote no ${built}`);
  return built;
}
