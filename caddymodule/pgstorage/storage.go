// Package pgstorage is Caddy's storage module over the PostgreSQL store's database: certificates,
// OCSP staples, locks, and caddy-ratelimit's distributed state, shared by N nodes:
//
//	storage directaid_postgres {env.DIRECTAID_DATABASE_URL}
//
// It shares one pool per DSN with the store (pgstore.Acquire). Importing it registers the module and
// the "postgres" store.
package pgstorage

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/certmagic"

	"github.com/directaid/directaid/backend/pgstore"
)

func init() {
	caddy.RegisterModule(new(PostgresStorage))
}

// PostgresStorage is Caddy's storage in the PostgreSQL database of the directaid store.
type PostgresStorage struct {
	// DSN is a postgres:// URL or key=value string; placeholders like {env.VAR} are replaced.
	DSN string `json:"dsn,omitempty"`

	dsn    string
	handle *pgstore.Shared
}

// CaddyModule returns the Caddy module information.
func (*PostgresStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "caddy.storage.directaid_postgres", New: func() caddy.Module { return new(PostgresStorage) }}
}

// Provision opens (or shares) the pool.
func (s *PostgresStorage) Provision(caddy.Context) error {
	dsn := caddy.NewReplacer().ReplaceKnown(s.DSN, "")
	if dsn == "" {
		return fmt.Errorf("directaid: the PostgreSQL DSN %q is empty once its placeholders are replaced", s.DSN)
	}
	h, err := pgstore.Acquire(dsn, caddy.Log().Named("directaid.postgres"))
	if err != nil {
		return err
	}
	s.dsn, s.handle = dsn, h
	return nil
}

// CertMagicStorage implements caddy.StorageConverter.
func (s *PostgresStorage) CertMagicStorage() (certmagic.Storage, error) { return s.handle.Certs, nil }

// Cleanup releases this config's hold on the pool.
func (s *PostgresStorage) Cleanup() error {
	if s.handle != nil {
		pgstore.Release(s.dsn)
		s.handle = nil
	}
	return nil
}

// UnmarshalCaddyfile reads `storage directaid_postgres <dsn>`.
func (s *PostgresStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module name
	if !d.Args(&s.DSN) || d.NextArg() {
		return d.Err("usage: storage directaid_postgres <dsn> (e.g. {env.DIRECTAID_DATABASE_URL})")
	}
	if d.NextBlock(0) {
		return d.Errf("storage directaid_postgres takes no block; found %q", d.Val())
	}
	return nil
}

var (
	_ caddy.StorageConverter = (*PostgresStorage)(nil)
	_ caddy.Provisioner      = (*PostgresStorage)(nil)
	_ caddy.CleanerUpper     = (*PostgresStorage)(nil)
	_ caddyfile.Unmarshaler  = (*PostgresStorage)(nil)
)
