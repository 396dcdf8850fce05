#!/usr/bin/env bash
# Writes vendor/jaq.diff, every change lro made to the published jaq crates' sources, and
# vendor/jaq.sha256, the digests of the sources it was taken from. Run it after changing a
# vendored file: the test `vendor_diff` (cli/tests/all/vendor.rs) fails until the two are current
# and every hunk of the diff carries an `lro:` comment saying why.
#
# Needs the network (crates.io) once; the published crates are kept in target/jaq-upstream.
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(jaq-core:3.1.2 jaq-std:3.0.4 jaq-json:2.0.3)
cache=target/jaq-upstream
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache" "$work/a" "$work/b"
for entry in "${crates[@]}"; do
  name=${entry%%:*} version=${entry#*:}
  crate="$cache/$name-$version.crate"
  [ -s "$crate" ] || curl -sSfL "https://static.crates.io/crates/$name/$name-$version.crate" -o "$crate"
  tar -xzf "$crate" -C "$work"
  mkdir "$work/a/$name" "$work/b/$name"
  cp -r "$work/$name-$version/src" "$work/a/$name/src"
  cp -r "vendor/$name/src" "$work/b/$name/src"
done
# Upstream modules lro leaves out with the features that use them (vendor/README.md).
rm -f "$work/a/jaq-core/src/load/arbitrary.rs" "$work/a/jaq-json/src/serde.rs"
# diff exits 1 when the trees differ, which they do.
(cd "$work" && diff -ruN a b || [ $? -eq 1 ]) | sed -E 's/^(---|\+\+\+) ([^\t]*)\t.*/\1 \2/' > vendor/jaq.diff
# What could go upstream (vendor/README.md): jq's syntax in jaq-core, taken from the diff, and
# the fix of a panic in jaq-std, written against the published crate; both must still apply.
awk '/^diff -ruN /{keep = ($3 ~ /jaq-core\/src\/(compile|load\/lex|load\/parse)\.rs$/)} keep' \
  vendor/jaq.diff > vendor/upstream/jaq-core-jq-syntax.patch
for offer in vendor/upstream/*.patch; do
  patch --dry-run --quiet -p1 -d "$work/a" < "$offer" || { echo "$offer no longer applies" >&2; exit 1; }
done
(cd vendor && find jaq-core/src jaq-std/src jaq-json/src -type f | LC_ALL=C sort | xargs sha256sum) > vendor/jaq.sha256
echo "vendor/jaq.diff: $(grep -c '^@@' vendor/jaq.diff) hunks in $(grep -c '^+++' vendor/jaq.diff) files"
