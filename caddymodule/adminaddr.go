package caddymodule

import (
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

// DefaultAdminSocket is the admin endpoint of the shipped Caddyfile and systemd unit: a unix socket in
// the service's RuntimeDirectory (/run/directaid, mode 0700), so that only the service's user and root
// can open it. The commands that call the admin endpoint (backup, moderate) use it unless told otherwise.
const DefaultAdminSocket = "unix//run/directaid/admin.sock"

// addAdminFlags adds --admin and --config to a command that calls the running server's admin endpoint.
func addAdminFlags(cmd *cobra.Command) {
	cmd.Flags().String("admin", "", "Address of Caddy's admin endpoint, e.g. unix//run/directaid/admin.sock or localhost:2019 (default: the --config Caddyfile's admin address, else $CADDY_ADMIN, else "+DefaultAdminSocket+")")
	cmd.Flags().String("config", "", "Caddyfile (or JSON config) of the running server, to take its admin address from, as 'directaid reload' does")
}

// adminAddress is the admin endpoint a command calls: --admin; else the `admin` address of the --config
// file (caddycmd.DetermineAdminAPIAddress, which `reload` and `stop` use too); else $CADDY_ADMIN, which
// Caddy itself takes as its default listen address; else DefaultAdminSocket.
func adminAddress(fl caddycmd.Flags) (string, error) {
	if a := fl.String("admin"); a != "" {
		return a, nil
	}
	if cfg := fl.String("config"); cfg != "" {
		return caddycmd.DetermineAdminAPIAddress("", nil, cfg, "")
	}
	if a, ok := os.LookupEnv("CADDY_ADMIN"); ok && a != "" {
		return a, nil
	}
	return DefaultAdminSocket, nil
}
