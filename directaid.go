// Package directaid registers the directaid Caddy modules. It exists so that a custom Caddy build can
// name this module alone: `xcaddy build --with github.com/directaid/directaid` (see xcaddy.sh).
package directaid

import (
	// The app, the handler, the Caddyfile syntax and the admin routes.
	_ "github.com/directaid/directaid/caddymodule"
)
