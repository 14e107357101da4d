#!/usr/bin/env bash
# Build the directaid binary with xcaddy v0.4.5 — the same Caddy, our module and caddy-ratelimit — plus any
# plugin the operator adds:
#   ./xcaddy.sh                                         # → ./directaid
#   ./xcaddy.sh --with github.com/caddy-dns/cloudflare  # extra plugins, as xcaddy takes them
# Versions are pinned to the ones in go.mod, so the build is the one we test.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ver() { (cd "$here" && go list -m -f '{{.Version}}' "$1"); }
CADDY_VERSION="$(ver github.com/caddyserver/caddy/v2)"
RATELIMIT_VERSION="$(ver github.com/mholt/caddy-ratelimit)"
export CADDY_VERSION
exec go run github.com/caddyserver/xcaddy/cmd/xcaddy@v0.4.5 build "$CADDY_VERSION" \
	--output "${OUTPUT:-./directaid}" \
	--with "github.com/mholt/caddy-ratelimit@$RATELIMIT_VERSION" \
	--with "github.com/directaid/directaid=$here" \
	"$@"
