package caddymodule

// The stores, registered as the binary registers them (directaid.go).
import (
	_ "github.com/directaid/directaid/backend/badgerstore"
	_ "github.com/directaid/directaid/caddymodule/pgstorage"
)
