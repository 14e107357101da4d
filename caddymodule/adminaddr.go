package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// RefuseSecondServer returns an error when args (the command line after the program's name) start a
// server (`run`, `start`) whose admin endpoint, as its --config file says, already answers: another
// server is running with it. Caddy removes a unix socket's file before it binds, and binds TCP with
// SO_REUSEPORT, so a second server would take the admin endpoint from the first (its backups, moderation
// and reloads would then fail once the second exits on the database's lock) and share its port. It also
// refuses them when something accepts connections on a port of the file's HTTP servers: two servers with
// different databases would share it. Without --config, or when nothing answers, it returns nil and the
// command runs as Caddy's.
func RefuseSecondServer(args []string) error {
	if len(args) == 0 || (args[0] != "run" && args[0] != "start") {
		return nil
	}
	fs := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(io.Discard)
	config, adapter := fs.String("config", "", ""), fs.String("adapter", "", "")
	fs.BoolP("help", "h", false, "")
	if err := fs.Parse(args[1:]); err != nil || *config == "" {
		return nil
	}
	// The file in Caddy's JSON, loaded once as `run` loads it (its adapter, or the name's), for both checks.
	cfg, _, _, err := caddycmd.LoadConfig(*config, *adapter)
	if err != nil || len(cfg) == 0 {
		return nil // the command itself says what is wrong with the file
	}
	if addr, err := caddycmd.DetermineAdminAPIAddress("", cfg, *config, ""); err == nil && answers(addr) {
		return fmt.Errorf("another server is already running with the admin endpoint %s of %s: stop it first "+
			"(directaid stop --config %s), or reload it with the new configuration (directaid reload --config %s). "+
			"Starting a second one would take that admin endpoint from the first, whose backups, moderation and "+
			"reloads would then fail", addr, *config, *config, *config)
	}
	// Nothing answers there (a socket file left by a server that was killed is removed by Caddy).
	if taken := answeringListeners(cfg); taken != "" {
		return fmt.Errorf("something already listens on %s, which %s serves on: stop it first, or give this "+
			"server another port. Caddy binds its ports with SO_REUSEPORT, so a second directaid would start "+
			"there too, and the system would share the connections between two servers and their databases "+
			"(half the publications in each, retries stored twice)", taken, *config)
	}
	return nil
}

// answers reports whether something accepts a connection on the admin address addr (a unix socket or a
// single TCP address).
func answers(addr string) bool {
	na, err := caddy.ParseNetworkAddress(addr)
	if err != nil || na.PortRangeSize() > 1 {
		return false
	}
	target := na.JoinHostPort(0)
	if na.IsUnixNetwork() {
		target, _, _ = strings.Cut(na.Host, "|") // unix//path|0600: the socket's mode follows its path
	}
	conn, err := net.DialTimeout(na.Network, target, 2*time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// answeringListeners is the first TCP address of the HTTP servers of cfg, a JSON config (their listen
// addresses, a host left out read as 127.0.0.1), on which something accepts a connection: "" when none
// does.
func answeringListeners(cfg []byte) string {
	var c struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Listen []string `json:"listen"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if json.Unmarshal(cfg, &c) != nil {
		return ""
	}
	for _, srv := range c.Apps.HTTP.Servers {
		for _, l := range srv.Listen {
			na, err := caddy.ParseNetworkAddress(l)
			if err != nil || na.IsUnixNetwork() || na.PortRangeSize() > 16 {
				continue
			}
			for i := range na.PortRangeSize() {
				target := na.JoinHostPort(i)
				if na.Host == "" {
					target = net.JoinHostPort("127.0.0.1", strconv.FormatUint(uint64(na.StartPort+i), 10))
				}
				if conn, err := net.DialTimeout("tcp", target, time.Second); err == nil {
					_ = conn.Close()
					return target
				}
			}
		}
	}
	return ""
}
