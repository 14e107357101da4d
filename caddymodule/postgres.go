package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/pgstore"
)

func init() {
	caddy.RegisterModule(new(PostgresStorage))
}

// pgDBs shares one pool (and one certificate storage, whose locks outlive a config) per DSN across the
// directaid app, the storage module and config reloads.
var pgDBs = caddy.NewUsagePool()

type pgHandle struct {
	db    *pgstore.DB
	certs *pgstore.CertStorage
}

func (h *pgHandle) Destruct() error {
	h.certs.Close()
	h.db.Close()
	return nil
}

// loadPostgres returns the shared handle of dsn; release it with pgDBs.Delete(dsn). Opening does not
// connect: the schema is migrated on first use, so that validating a config touches nothing.
func loadPostgres(dsn string) (*pgHandle, error) {
	val, _, err := pgDBs.LoadOrNew(dsn, func() (caddy.Destructor, error) {
		db, err := pgstore.Open(dsn)
		if err != nil {
			return nil, err
		}
		// A node answers 503 while it migrates: its log says why, and how long each step took.
		log := caddy.Log().Named("directaid.postgres")
		db.Progress = func(ev pgstore.MigrationEvent) {
			if ev.Kind == pgstore.MigrationFailed {
				log.Error("schema: "+ev.String()+"; tried again by the next request", zap.Int("version", ev.Version))
				return
			}
			log.Info("schema: "+ev.String(), zap.Int("version", ev.Version))
		}
		return &pgHandle{db: db, certs: pgstore.NewCertStorage(db)}, nil
	})
	if err != nil {
		return nil, err
	}
	return val.(*pgHandle), nil
}

// expandDSN resolves placeholders such as {env.DIRECTAID_DATABASE_URL}.
func expandDSN(dsn string) (string, error) {
	out := caddy.NewReplacer().ReplaceKnown(dsn, "")
	if out == "" {
		return "", fmt.Errorf("directaid: the PostgreSQL DSN %q is empty once its placeholders are replaced", dsn)
	}
	return out, nil
}

// PostgresStorage is Caddy's storage (certificates, OCSP staples, locks, and caddy-ratelimit's
// distributed state) in the PostgreSQL database of the directaid store, so that N nodes share them:
//
//	storage directaid_postgres {env.DIRECTAID_DATABASE_URL}
type PostgresStorage struct {
	// DSN is a postgres:// URL or key=value string; placeholders like {env.VAR} are replaced.
	DSN string `json:"dsn,omitempty"`

	dsn    string
	handle *pgHandle
}

// CaddyModule returns the Caddy module information.
func (*PostgresStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "caddy.storage.directaid_postgres", New: func() caddy.Module { return new(PostgresStorage) }}
}

// Provision opens (or shares) the pool.
func (s *PostgresStorage) Provision(caddy.Context) error {
	dsn, err := expandDSN(s.DSN)
	if err != nil {
		return err
	}
	h, err := loadPostgres(dsn)
	if err != nil {
		return err
	}
	s.dsn, s.handle = dsn, h
	return nil
}

// CertMagicStorage implements caddy.StorageConverter.
func (s *PostgresStorage) CertMagicStorage() (certmagic.Storage, error) { return s.handle.certs, nil }

// Cleanup releases this config's hold on the pool.
func (s *PostgresStorage) Cleanup() error {
	if s.handle == nil {
		return nil
	}
	_, err := pgDBs.Delete(s.dsn)
	return err
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
