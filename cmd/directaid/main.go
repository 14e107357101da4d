// Command directaid is Caddy with the directaid module and caddy-ratelimit compiled in.
package main

import (
	"fmt"
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-ratelimit"

	_ "github.com/directaid/directaid"
	"github.com/directaid/directaid/caddymodule"
)

func main() {
	if err := caddymodule.RefuseSecondServer(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "directaid:", err)
		os.Exit(1)
	}
	caddycmd.Main()
}
