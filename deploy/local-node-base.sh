#!/bin/sh
# Makes a minimal base image (localhost/svc-node-base:local) from this host's node binary and the shared
# libraries it and the native addons under NODE_MODULES (default .image-context/node_modules) need, for
# `make image-test` where no base image can be pulled. Not for production: use node:20-bookworm-slim.
set -eu
tag=${1:-localhost/svc-node-base:local}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
node=$(command -v node)
addons=$(find "${NODE_MODULES:-.image-context/node_modules}" -name '*.node' -type f 2>/dev/null || true)
libs=$(for binary in "$node" $addons; do ldd "$binary" 2>/dev/null | grep -o '/[^ :]*' || true; done | grep -v "${NODE_MODULES:-.image-context/node_modules}" | sort -u)
for file in "$node" $libs; do
  [ -f "$file" ] || continue # ldd of an addon for another libc (musl) names what this host lacks
  mkdir -p "$root$(dirname "$file")"
  cp -L "$file" "$root$file"
done
mkdir -p "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
tar -C "$root" -cf "$root.tar" .
podman import "$root.tar" "$tag" >/dev/null
rm -f "$root.tar"
echo "$tag"
