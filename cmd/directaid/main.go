// Command directaid is Caddy with the directaid module and caddy-ratelimit compiled in.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-ratelimit"

	_ "github.com/directaid/directaid"
)

func main() {
	caddycmd.Main()
}
