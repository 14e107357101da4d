// Package directaid registers the directaid Caddy modules and its stores. It exists so that a custom Caddy
// build can name this module alone: `xcaddy build --with github.com/directaid/directaid` (see xcaddy.sh).
package directaid

import (
	// The app, the handler, the Caddyfile syntax and the admin routes.
	_ "github.com/directaid/directaid/caddymodule"

	// The stores (store.Register): the embedded one, and PostgreSQL with Caddy's storage module over it.
	// A store not imported here is not in the binary.
	_ "github.com/directaid/directaid/backend/badgerstore"
	_ "github.com/directaid/directaid/caddymodule/pgstorage"
)
