#!/bin/sh
# update.sh VERSION: replace the vendored axe-core with VERSION from the npm
# registry (npm pack), keeping only the minified file and its licences.
set -eu
version=${1:?usage: sh update.sh VERSION}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "axe-core@$version" >/dev/null && tar xzf axe-core-*.tgz)
cp "$tmp/package/axe.min.js" "$tmp/package/LICENSE" "$tmp/package/LICENSE-3RD-PARTY.txt" "$here/"
sha256sum "$here/axe.min.js"
