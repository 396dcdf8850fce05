#!/usr/bin/env node
// `lro` for npm users: runs the binary of the platform package that npm installed beside this one
// (an optional dependency whose "os", "cpu" and "libc" fit the machine), with the same arguments,
// standard streams and exit status. LRO_BINARY names another binary (one built with
// `cargo install lro-cli`, say) for a platform no package covers.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");
const platforms = require("../platforms.json");

function libc() {
  if (process.platform !== "linux") return undefined;
  // Node's own report says which C library it runs on; musl has no glibc version.
  const report = process.report && process.report.getReport();
  return report && report.header && report.header.glibcVersionRuntime ? "glibc" : "musl";
}

function fail(message) {
  process.stderr.write(`lro-cli: ${message}\n`);
  process.exit(1);
}

function binary() {
  if (process.env.LRO_BINARY) return process.env.LRO_BINARY;
  const c = libc();
  const fits = platforms.find((p) => p.os === process.platform && p.cpu === process.arch && (!p.libc || p.libc === c));
  const here = `${process.platform} ${process.arch}${c ? ` (${c})` : ""}`;
  if (!fits) {
    const known = platforms.map((p) => `${p.os} ${p.cpu}${p.libc ? ` (${p.libc})` : ""}`).join(", ");
    fail(
      `no lro binary is published for ${here}; there are packages for ${known}. ` +
        "Build one with `cargo install lro-cli` and set LRO_BINARY to its path.",
    );
  }
  try {
    return path.join(path.dirname(require.resolve(`${fits.package}/package.json`)), "bin", fits.binary);
  } catch {
    return fail(
      `the package ${fits.package}, which holds lro for ${here}, is not installed. npm installs it ` +
        "with lro-cli unless optional dependencies are left out (--omit=optional, --no-optional): " +
        "install lro-cli again without that option.",
    );
  }
}

const program = binary();
const child = spawn(program, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
// An MCP client stops a server by signalling the process it started, which is this one.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => fail(`could not run ${program}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so that whoever started `lro` sees how it ended.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
