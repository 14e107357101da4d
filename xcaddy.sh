#!/usr/bin/env bash
# Build the directaid binary with xcaddy v0.4.5 — the same Caddy, our module and caddy-ratelimit — plus any
# plugin the operator adds:
#   ./xcaddy.sh                                         # → ./directaid
#   ./xcaddy.sh --with github.com/caddy-dns/cloudflare  # extra plugins, as xcaddy takes them
# Versions are pinned to the ones in go.mod, so the build is the one we test. Our module is named at
# v0.0.0 with a local replacement: without a version, go get would ask the proxy for its version list.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ver() { (cd "$here" && go list -m -f '{{.Version}}' "$1"); }
CADDY_VERSION="$(ver github.com/caddyserver/caddy/v2)"
RATELIMIT_VERSION="$(ver github.com/mholt/caddy-ratelimit)"
out="${OUTPUT:-$PWD/directaid}"
# go get asks a proxy about every module it sees (latest version, deprecation), even a replaced one.
# Our module is not published on a proxy, so a tiny file proxy answers for it; the rest falls through.
proxy="$(mktemp -d)"
trap 'rm -rf "$proxy"' EXIT
mod="$proxy/github.com/directaid/directaid/@v"
mkdir -p "$mod"
echo v0.0.0 > "$mod/list"
echo '{"Version":"v0.0.0"}' > "$mod/v0.0.0.info"
cp "$here/go.mod" "$mod/v0.0.0.mod"
export GOPROXY="file://$proxy,${GOPROXY:-$(go env GOPROXY)}"
# xcaddy runs from the repo so that `go tool` finds the version pinned in go.mod.
cd "$here"
go tool xcaddy build "$CADDY_VERSION" \
	--output "$out" \
	--with "github.com/mholt/caddy-ratelimit@$RATELIMIT_VERSION" \
	--with "github.com/directaid/directaid@v0.0.0=$here" \
	"$@"
