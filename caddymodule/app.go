// Package caddymodule is the Caddy glue of directaid: the app that owns the store, the HTTP handler and
// the Caddyfile syntax. Everything else lives in backend/, which knows nothing of Caddy.
package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	ratelimit "github.com/mholt/caddy-ratelimit"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/webhooks"
	"github.com/directaid/directaid/site"
)

func init() {
	caddy.RegisterModule(new(App))
	caddy.RegisterModule(Handler{})
}

// stores shares each open database across config reloads: a reload provisions the new config while the
// old one still holds Badger's directory lock, so both must use the same handle.
var stores = caddy.NewUsagePool()

// storeHandle is a database shared by the configs that name it, with the abuse bounds' windows over it,
// which a reload therefore keeps.
type storeHandle struct {
	store.Store
	windows *backend.AbuseWindows
	// stopWatch ends the claims of this process's instance id in a shared database (watchInstance).
	stopWatch func()
}

func (s storeHandle) Destruct() error {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	return s.Close()
}

// Database selects the store.
type Database struct {
	// Badger is the directory of the embedded database; default: Caddy's data dir + /directaid.
	Badger string `json:"badger,omitempty"`
	// MinFreeSpace is the free space, in bytes, of the database's disk below which publications are
	// refused (503 with Retry-After) until space returns; default 256 MiB, -1 never refuses. Badger only:
	// with Postgres it is a configuration error, since the node keeps nothing on a local disk.
	MinFreeSpace int64 `json:"min_free_space,omitempty"`
	// Postgres is the DSN of a PostgreSQL database shared by several nodes (placeholders such as
	// {env.DIRECTAID_DATABASE_URL} are replaced); when set, Badger is not used.
	Postgres string `json:"postgres,omitempty"`
}

// App is the `directaid` Caddy app: the configuration, the store and the HTTP surface built on them.
type App struct {
	Database    Database    `json:"database,omitempty"`
	PublicURL   string      `json:"public_url,omitempty"`
	Emergencies []Emergency `json:"emergencies,omitempty"`
	// HideAfterReports is how many distinct reporters hide a record until an operator reviews it (0: 3).
	HideAfterReports int `json:"hide_after_reports,omitempty"`
	// OperatorContact is how people reach the operator (an e-mail, a phone): every page's footer and
	// /privacidad show it.
	OperatorContact string `json:"operator_contact,omitempty"`
	// MapTiles is the background of the site's maps: an XYZ tile URL template and its attribution (unset:
	// OpenStreetMap's).
	MapTiles *site.MapTiles `json:"map_tiles,omitempty"`
	// Feed bounds the live feed's streams.
	Feed FeedLimits `json:"feed,omitzero"`
	// Webhooks tell the apps that publish what happens to their records (webhooks.go).
	Webhooks []Webhook `json:"webhooks,omitempty"`

	dir      string
	dsn      string // the PostgreSQL DSN, placeholders replaced
	openOnce sync.Once
	openErr  error
	store    store.Store
	windows  *backend.AbuseWindows // the abuse bounds' windows over store, kept across reloads
	backup   store.Backupper       // nil when the store cannot back itself up
	svc      *backend.Service
	handler  atomic.Pointer[httpapi.Handler]
	current  atomic.Pointer[backend.Service] // svc, for the metrics scraped concurrently
	disk     atomic.Value                    // diskUser, for the metrics and the operator's page
	observe  *backend.Observe
	ctx      caddy.Context
	logger   *zap.Logger
	// stopExpiry ends the expiry sweep started with the store (startExpiry); nil before.
	expiryMu   sync.Mutex
	stopExpiry func()
	// webhooks runs this config's webhooks (nil without any); stopWebhooks ends them.
	webhooks     atomic.Pointer[webhooks.Service]
	stopWebhooks func()
}

// FeedLimits bound the open streams of the live feed (GET /api/public/v1/help/events); 0: the defaults
// (1000 on the node, 4 per client address). Over them a stream is refused: 503, and 429 for an address.
type FeedLimits struct {
	Streams          int `json:"streams,omitempty"`
	StreamsPerClient int `json:"streams_per_client,omitempty"`
}

// Emergency is one emergency of the app's JSON: backend.Emergency, with the lifetimes of its open records
// as Caddy durations ("14d", "720h" or nanoseconds), as Caddy modules take durations. Zero: the defaults
// (backend.DefaultRequestTTL, DefaultOfferTTL). A reload changes them for records published or renewed
// after it; open records keep the expiresAt they were given.
type Emergency struct {
	backend.Emergency
	RequestTTL caddy.Duration `json:"request_ttl,omitempty"`
	OfferTTL   caddy.Duration `json:"offer_ttl,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (*App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "directaid", New: func() caddy.Module { return new(App) }}
}

var slugRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Validate checks the configuration, whichever adapter produced it.
func (a *App) Validate() error {
	if err := checkPublicURL(a.PublicURL); err != nil {
		return err
	}
	if a.Database.Postgres != "" && (a.Database.Badger != "" || a.Database.MinFreeSpace != 0) {
		return fmt.Errorf("directaid: database postgres takes neither badger nor min_free_space (those are of database badger)")
	}
	if a.MapTiles != nil {
		if err := site.CheckMapTiles(*a.MapTiles); err != nil {
			return fmt.Errorf("directaid: %w", err)
		}
	}
	seen := map[string]bool{}
	for _, e := range a.Emergencies {
		if err := checkSlug(e.Slug, seen); err != nil {
			return err
		}
		seen[e.Slug] = true
		if e.Title == "" {
			return fmt.Errorf("directaid: emergency %q needs a title", e.Slug)
		}
		if err := checkOccurred(e.Emergency); err != nil {
			return err
		}
		if err := checkArea(e.Emergency); err != nil {
			return err
		}
		if err := checkLines(e.Emergency); err != nil {
			return err
		}
		if e.RequestTTL < 0 || e.OfferTTL < 0 {
			return fmt.Errorf("directaid: emergency %q: request_ttl and offer_ttl must be positive", e.Slug)
		}
	}
	return checkWebhooks(a.Webhooks)
}

// The checks below are also called by the Caddyfile parser at the token they concern, so that its
// errors name the right line.

func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("directaid: public_url %q must be an absolute http(s) URL with no path, like https://ayuda.example.org", s)
	}
	return nil
}

// checkSlug checks the form of slug and that it is not among those already seen.
func checkSlug(slug string, seen map[string]bool) error {
	if !slugRE.MatchString(slug) || len(slug) > 64 {
		return fmt.Errorf("directaid: emergency slug %q must be lowercase letters, digits and single hyphens (at most 64)", slug)
	}
	if seen[slug] {
		return fmt.Errorf("directaid: emergency %q is declared twice", slug)
	}
	return nil
}

func checkOccurred(e backend.Emergency) error {
	if e.OccurredOn != "" {
		if _, err := time.Parse(time.DateOnly, e.OccurredOn); err != nil {
			return fmt.Errorf("directaid: emergency %q: occurred %q must be a date YYYY-MM-DD", e.Slug, e.OccurredOn)
		}
	}
	return nil
}

// checkArea checks that every code of an emergency's area is a listed departamento or municipio.
func checkArea(e backend.Emergency) error {
	for _, c := range e.Area {
		if p, ok := places.Lookup(c); !ok || p.Kind() == places.CentroPoblado {
			return fmt.Errorf("directaid: emergency %q: area %q must be the DIVIPOLA code of a departamento (2 digits, 63 for Quindío) or a municipio (5 digits, 63001 for Armenia)", e.Slug, c)
		}
	}
	return nil
}

var lineNumberRE = regexp.MustCompile(`^\+?[0-9]{3,15}$`)

// checkLines checks an emergency's phone lines: a short name and a number of digits.
func checkLines(e backend.Emergency) error {
	for _, l := range e.Lines {
		if n := utf8.RuneCountInString(l.Name); n == 0 || n > 60 || strings.ContainsFunc(l.Name, unicode.IsControl) {
			return fmt.Errorf("directaid: emergency %q: line name %q must be one line of 1 to 60 characters", e.Slug, l.Name)
		}
		if !lineNumberRE.MatchString(l.Number) {
			return fmt.Errorf("directaid: emergency %q: line %q: number %q must be 3 to 15 digits, optionally after +", e.Slug, l.Name, l.Number)
		}
	}
	return nil
}

// Provision resolves the database directory. The database itself is opened by Start (or the first
// request, whichever comes first): `directaid validate` provisions but never starts, so it must not take
// the directory lock that a running server holds.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	a.observe = &backend.Observe{Metrics: series, Publications: a.logger.Named("publication"), Exports: a.logger.Named("export"), Site: a.logger.Named("site")}
	if err := registerMetrics(ctx.GetMetricsRegistry(), a); err != nil {
		return err
	}
	if !slices.ContainsFunc(a.Emergencies, func(e Emergency) bool { return !e.Inactive }) {
		a.logger.Warn("no active emergency: every publication is refused (no_active_emergency) until the configuration declares one (emergency <slug> { title … })",
			zap.Int("emergencies", len(a.Emergencies)))
	}
	if a.Database.Postgres != "" {
		dsn, err := expandDSN(a.Database.Postgres)
		if err != nil {
			return err
		}
		a.dsn, a.dir = dsn, "postgres\x00"+dsn // the key of the shared store (stores)
		return nil
	}
	a.dir = a.Database.Badger
	if a.dir == "" {
		a.dir = filepath.Join(caddy.AppDataDir(), "directaid")
	}
	dir, err := filepath.Abs(a.dir)
	if err != nil {
		return err
	}
	a.dir = dir
	return nil
}

// Start opens (or shares, across a reload) the store and builds the service.
func (a *App) Start() error {
	err := a.open()
	if err != nil {
		a.refuseStart(err) // a database that cannot open for want of disk space ends the process
	}
	return err
}

func (a *App) open() error {
	a.openOnce.Do(func() { a.openErr = a.doOpen() })
	return a.openErr
}

func (a *App) doOpen() error {
	val, _, err := stores.LoadOrNew(a.dir, func() (caddy.Destructor, error) {
		s, err := a.openDatabase()
		if err != nil {
			return nil, err
		}
		h := storeHandle{Store: s, windows: backend.NewAbuseWindows()}
		if db, ok := s.(instanceClaimer); ok {
			h.stopWatch = watchInstance(db, a.logger.Named("instance"))
		}
		return h, nil
	})
	if err != nil {
		return err
	}
	a.store, a.windows = val.(storeHandle).Store, val.(storeHandle).windows
	if err := a.checkDatabaseChange(); err != nil {
		return err
	}
	// A reload shares the open store (stores): this config's min_free_space reaches it here, where Open
	// took the first config's.
	if g, ok := a.store.(interface{ SetMinFreeBytes(int64) }); ok {
		g.SetMinFreeBytes(a.Database.MinFreeSpace)
	}
	// Optional: a database server is backed up with its own tools (store.Backupper).
	a.backup, _ = a.store.(store.Backupper)
	a.disk.Store(diskUser{a.store})
	if err := a.build(backend.Config{RateLimits: a.findLimits()}); err != nil {
		return err
	}
	a.startExpiry()
	return a.startWebhooks()
}

// startExpiry runs this config's expiry sweep (backend.Service.RunExpiry) until Stop or Cleanup. During a
// reload the old config's sweep and the new one's may overlap, as several nodes' do: harmless.
func (a *App) startExpiry() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	log := a.logger.Named("expiry")
	svc := a.svc
	go func() {
		defer close(done)
		svc.RunExpiry(ctx, func(n int, err error) {
			if err != nil {
				log.Error("expiry sweep failed; retried next period", zap.Int("expired", n), zap.Error(err))
			} else if n > 0 {
				log.Info("open records past their expiresAt marked expired", zap.Int("expired", n))
			}
		})
	}()
	a.expiryMu.Lock()
	a.stopExpiry = func() { cancel(); <-done }
	a.expiryMu.Unlock()
}

// build makes the service from the app's configuration and the rate limits in limits.
func (a *App) build(limits backend.Config) error {
	limits.PublicURL, limits.Observe, limits.ExportWriter = a.PublicURL, a.observe, newDeadlineWriter
	for _, e := range a.Emergencies {
		be := e.Emergency
		be.RequestTTL, be.OfferTTL = time.Duration(e.RequestTTL), time.Duration(e.OfferTTL)
		limits.Emergencies = append(limits.Emergencies, be)
	}
	limits.HideAfterReports, limits.OperatorContact = a.HideAfterReports, a.OperatorContact
	limits.FeedStreams, limits.FeedStreamsPerClient = a.Feed.Streams, a.Feed.StreamsPerClient
	limits.Responded, limits.Windows = a.responded, a.windows
	a.svc = backend.NewService(a.store, limits)
	a.current.Store(a.svc)
	o := httpapi.Options{MCP: mcpserver.New(a.svc)}
	if a.MapTiles != nil {
		o.MapTiles = *a.MapTiles
	}
	h, err := httpapi.NewHandler(a.svc, o)
	if err != nil {
		return err
	}
	a.handler.Store(h)
	return nil
}

// findLimits reads the zones of backend.Zones from the rate_limit handlers that the Caddyfile configures
// (the first of each name), so that the numbers discovery and the docs publish are the enforced ones.
func (a *App) findLimits() map[string]backend.Limit {
	limits := map[string]backend.Limit{}
	httpApp, err := a.ctx.AppIfConfigured("http")
	if err != nil {
		return limits
	}
	app, ok := httpApp.(*caddyhttp.App)
	if !ok {
		return limits
	}
	var walk func(routes caddyhttp.RouteList)
	walk = func(routes caddyhttp.RouteList) {
		for _, rt := range routes {
			for _, h := range rt.Handlers {
				if rl, ok := h.(*RateLimits); ok {
					h = rl.limiter
				}
				switch h := h.(type) {
				case *ratelimit.Handler:
					for _, z := range backend.Zones {
						if rl, ok := h.RateLimits[z.Name]; ok {
							if _, seen := limits[z.Name]; !seen {
								limits[z.Name] = backend.Limit{Events: rl.MaxEvents, Window: time.Duration(rl.Window)}
							}
						}
					}
				case *caddyhttp.Subroute:
					walk(h.Routes)
				}
			}
		}
	}
	for _, srv := range app.Servers {
		walk(srv.Routes)
	}
	return limits
}

// Stop implements caddy.App: it ends the live feed's streams, the expiry sweep and the webhooks.
func (a *App) Stop() error {
	if svc := a.current.Load(); svc != nil {
		svc.CloseFeed()
	}
	a.expiryMu.Lock()
	stops := []func(){a.stopExpiry, a.stopWebhooks}
	a.stopExpiry, a.stopWebhooks = nil, nil
	a.expiryMu.Unlock()
	for _, stop := range stops {
		if stop != nil {
			stop()
		}
	}
	return nil
}

// Cleanup releases this config's hold on the store; the last holder closes it.
func (a *App) Cleanup() error {
	_ = a.Stop() // a config that opened its store but was never started (or stopped) has a sweep too
	if a.dir != "" && a.store != nil {
		_, err := stores.Delete(a.dir)
		return err
	}
	return nil
}

var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)

// inUse is the database (App.dir: a directory, or postgres and its DSN) of the config that started last,
// and its store.
var inUse struct {
	sync.Mutex
	dir   string
	store store.Store
}

// ErrEmptyDatabaseOnReload refuses a reload whose database holds no record while the one in use holds
// some: a mistyped path would otherwise blank the network, and every publication would go where no
// backup looks.
var ErrEmptyDatabaseOnReload = errors.New("this configuration's database holds no records while the one in use holds some: reload refused (a mistyped path?). To start over on an empty database, stop the server and start it with this configuration")

// checkDatabaseChange looks at a config whose database is not the one of the config before it (a reload
// that changed `database`): to one that holds no records, while the one in use holds some, it refuses
// (ErrEmptyDatabaseOnReload); to one that holds records (moved, or restored from a backup) it says so at
// WARN, with both and the new one's count, and the network serves it.
func (a *App) checkDatabaseChange() error {
	inUse.Lock()
	defer inUse.Unlock()
	before, old := inUse.dir, inUse.store
	if before == "" || before == a.dir {
		inUse.dir, inUse.store = a.dir, a.store
		return nil
	}
	n, err := a.store.Count(a.ctx)
	describe := func(dir string) string {
		if strings.HasPrefix(dir, "postgres\x00") {
			return "postgres" // never the DSN: it may hold a password
		}
		return dir
	}
	if err == nil && n == 0 && old != nil {
		if had, err := old.Count(a.ctx); err == nil && had > 0 {
			a.logger.Error("reload refused: its database holds no records while the one in use holds some",
				zap.String("in_use", describe(before)), zap.Int("records_in_use", had), zap.String("refused", describe(a.dir)))
			return fmt.Errorf("%w (in use: %s, %d records; this one: %s)", ErrEmptyDatabaseOnReload, describe(before), had, describe(a.dir))
		}
	}
	inUse.dir, inUse.store = a.dir, a.store
	a.logger.Warn("this configuration uses another database than the one before it: the network now serves what this one holds",
		zap.String("before", describe(before)), zap.String("now", describe(a.dir)), zap.Int("records", n), zap.Error(err))
	return nil
}
