package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/webhooks"
	"github.com/directaid/directaid/schema"
)

// Webhook is one webhook of the app's JSON: where the events of the records published under Sources go,
// signed with Secret (placeholders such as {env.DIRECTAID_WEBHOOK_SECRET} are replaced, so that the
// secret need not be in the config), each attempt bounded by Timeout (0: 10s).
type Webhook struct {
	URL     string         `json:"url"`
	Secret  string         `json:"secret"`
	Sources []string       `json:"sources"`
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// webhookMetrics are the webhooks' series, shared by every config as metrics is.
var webhookMetrics = webhooks.NewMetrics()

// hook is w as the webhooks package takes it; with replace, its secret's placeholders replaced (at start:
// a config is adapted and validated where the secret's variable may not be set, so checks before start
// take a placeholder as it is written).
func (w Webhook) hook(replace bool) webhooks.Hook {
	secret := w.Secret
	if replace {
		secret = caddy.NewReplacer().ReplaceKnown(secret, "")
	}
	return webhooks.Hook{URL: w.URL, Secret: secret, Sources: w.Sources, Timeout: time.Duration(w.Timeout)}
}

// check checks w as the configuration gives it: a secret with a placeholder ({env.VARIABLE}) is checked
// once replaced, when the server starts (startWebhooks), not as the placeholder's own text.
func (w Webhook) check() error {
	h := w.hook(false)
	if strings.Contains(w.Secret, "{") {
		h.Secret = strings.Repeat("x", 16)
	}
	return webhooks.CheckHook(h)
}

// checkWebhooks checks the webhooks as Validate does.
func checkWebhooks(ws []Webhook) error {
	seen := map[string]bool{}
	for _, w := range ws {
		if err := w.check(); err != nil {
			return fmt.Errorf("directaid: %w", err)
		}
		if seen[w.URL] {
			return fmt.Errorf("directaid: webhook %q is declared twice", w.URL)
		}
		seen[w.URL] = true
	}
	return nil
}

// parseWebhook parses `webhook <url> { secret <s>; sources <source>...; timeout <duration> }`.
func parseWebhook(d *caddyfile.Dispenser) (Webhook, error) {
	var w Webhook
	if !d.Args(&w.URL) || d.NextArg() {
		return w, d.Err("usage: webhook <https://app.example.org/hook> { secret <secret>; sources <source>...; timeout <duration> }")
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch name := d.Val(); name {
		case "secret":
			if !d.Args(&w.Secret) || d.NextArg() {
				return w, d.Err("usage: secret <at least 16 characters, or {env.VARIABLE}>")
			}
		case "sources":
			srcs := d.RemainingArgs()
			if len(srcs) == 0 {
				return w, d.Err("usage: sources <source>... (the source of the app's publications)")
			}
			w.Sources = append(w.Sources, srcs...)
		case "timeout":
			var v string
			if !d.Args(&v) || d.NextArg() {
				return w, d.Err("usage: timeout <duration, e.g. 10s>")
			}
			t, err := caddy.ParseDuration(v)
			if err != nil || t <= 0 || t > 5*time.Minute {
				return w, d.Errf("timeout %q must be a positive duration of at most 5m, like 10s", v)
			}
			w.Timeout = caddy.Duration(t)
		default:
			return w, d.Errf("unknown webhook option %q (known: secret, sources, timeout)", name)
		}
	}
	if err := w.check(); err != nil {
		return w, d.WrapErr(err)
	}
	return w, nil
}

// startWebhooks runs this config's webhooks (derivation and delivery) until Stop or Cleanup. During a
// reload the old config's and the new one's may overlap, as several nodes' do: the outbox keeps each
// event once and leases each to one deliverer.
func (a *App) startWebhooks() error {
	if len(a.Webhooks) == 0 {
		return nil
	}
	var hooks []webhooks.Hook
	for _, w := range a.Webhooks {
		hooks = append(hooks, w.hook(true))
	}
	svc := a.svc
	wh, err := webhooks.New(webhooks.Config{Hooks: hooks, Store: a.store, PublicURL: a.PublicURL, Metrics: webhookMetrics,
		Log: a.logger.Named("webhooks"),
		Matches: func(ctx context.Context, id string) (*schema.HelpMatches, error) {
			return svc.MatchesFor(ctx, a.PublicURL, id)
		}})
	if err != nil {
		return fmt.Errorf("directaid: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		wh.Run(ctx)
	}()
	a.webhooks.Store(wh)
	a.expiryMu.Lock()
	a.stopWebhooks = func() { cancel(); <-done }
	a.expiryMu.Unlock()
	return nil
}

// responded hands a new response to the webhooks (backend.Config.Responded).
func (a *App) responded(ctx context.Context, id, responseID string) {
	if wh := a.webhooks.Load(); wh != nil {
		wh.Responded(ctx, id, responseID)
	}
}

// webhooksHandler answers GET /directaid/webhooks[?limit=n] on the admin endpoint: the configured
// webhooks (never their secrets), the pending events and the latest deliveries (default 100, at most 1000).
func webhooksHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("limit %q must be a whole number from 1 to 1000", v)}
		}
		limit = n
	}
	app, err := currentApp()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	log, err := app.webhooks.Load().Deliveries(r.Context(), limit)
	if err != nil {
		app.logger.Error("webhook delivery log unreadable", zap.Error(err))
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(log)
}
