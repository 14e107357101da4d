package pgstorage

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestPostgresStorageModule: `storage directaid_postgres {env.…}` in a Caddyfile adapts to the module,
// and Caddy, started with it, keeps what it stores in PostgreSQL; a reload shares the same pool.
func TestPostgresStorageModule(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	t.Setenv("DIRECTAID_TEST_STORAGE_DSN", dsn)
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	caddyfileText := fmt.Sprintf(`{
	admin off
	persist_config off
	storage directaid_postgres {env.DIRECTAID_TEST_STORAGE_DSN}
}
http://127.0.0.1:%d {
	respond "ok"
}
`, port)
	adapter := caddyconfig.GetAdapter("caddyfile")
	cfg, warns, err := adapter.Adapt([]byte(caddyfileText), nil)
	if err != nil || len(warns) > 0 {
		t.Fatalf("adapt: %v %v", err, warns)
	}
	var parsed struct {
		Storage map[string]string `json:"storage"`
	}
	if err := json.Unmarshal(cfg, &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Storage["module"] != "directaid_postgres" || parsed.Storage["dsn"] != "{env.DIRECTAID_TEST_STORAGE_DSN}" {
		t.Fatalf("adapted storage = %v; the placeholder must stay for run time", parsed.Storage)
	}
	for range 2 { // the second Load is a reload
		if err := caddy.Load(cfg, true); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = caddy.Stop() })
	if handles := pgstore.SharedPools(); handles != 1 {
		t.Fatalf("%d pools after a reload; want one shared", handles)
	}
	ctx := context.Background()
	st := caddy.ActiveContext().Storage()
	if err := st.Store(ctx, "acme/test/key", []byte("valor")); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SELECT convert_from(value, 'UTF8') FROM directaid_certmagic_data WHERE key = 'acme/test/key'`).Scan(&v); err != nil || v != "valor" {
		t.Fatalf("Caddy's storage did not reach PostgreSQL: %q, %v", v, err)
	}
}

// TestPostgresStorageCaddyfileErrors: a missing or extra argument is an error naming the line.
func TestPostgresStorageCaddyfileErrors(t *testing.T) {
	for _, in := range []string{"directaid_postgres", "directaid_postgres a b", "directaid_postgres a {\n dsn b\n}"} {
		err := new(PostgresStorage).UnmarshalCaddyfile(caddyfile.NewTestDispenser(in))
		if err == nil || !strings.Contains(err.Error(), "Testfile:") {
			t.Errorf("%q: %v; want an error naming its line", in, err)
		}
	}
}
