package backend

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Channels through which a publication arrives, the `channel` label and log field.
const (
	ChannelAPI  = "api"  // POST /api/public/v1/help
	ChannelMCP  = "mcp"  // the MCP publishing tools
	ChannelForm = "form" // the site's forms (/pedir, /ofrecer)
)

// Outcomes of a publication, the `outcome` label and log field.
const (
	OutcomeCreated   = "created"
	OutcomeDuplicate = "duplicate"
	OutcomeRefused   = "refused"
)

// Metrics receives the service's counts (backend/metrics keeps them as Prometheus series). Every label
// value comes from a fixed set in this package or from the operator's configuration: never an id, a
// phone or anything a client wrote.
type Metrics interface {
	// Published counts one publication by channel (Channel*), outcome (Outcome*) and, for a refusal, its
	// error code (one of schema.ErrorCodes, or "other").
	Published(channel, outcome, code string)
	// MCPCall counts one MCP tool call; outcome is ok or error (a result with isError).
	MCPCall(tool, outcome string)
	// Read times one read of view in format.
	Read(view, format string, d time.Duration)
	// RateLimited counts one 429 of zone (one of RateLimitZones).
	RateLimited(zone string)
	// Reported counts one community report by reason and outcome.
	Reported(reason, outcome string)
	// Moderated counts one moderation action (one of ModerationActions).
	Moderated(action string)
	// FeedSubscribers moves the number of open streams of the live feed by delta.
	FeedSubscribers(delta int)
	// FeedDelivered counts one event (one of FeedEventNames) written to a subscriber.
	FeedDelivered(event string)
}

// Observe is what the service reports to: the metrics and the publication log. Both may be nil.
type Observe struct {
	Metrics Metrics
	// Publications receives one line per publication outcome, never personal data (README: Logs).
	Publications *zap.Logger
	// Exports receives one line per whole export cut mid-stream (the client sees only a cut body).
	Exports *zap.Logger
	// Site receives the errors the website's pages answer 500 for (ERROR) and 503 for (DEBUG: a
	// database that cannot answer refuses every request alike, and is counted and logged by the store).
	Site *zap.Logger
}

// SiteError logs the error a page of the website answered status for (its path, never its query).
func (o *Observe) SiteError(path string, status int, err error) {
	if o == nil || o.Site == nil {
		return
	}
	level := zap.ErrorLevel
	if status == 503 {
		level = zap.DebugLevel
	}
	o.Site.Log(level, "page error", zap.String("path", path), zap.Int("status", status), zap.Error(err))
}

// errorCodes bounds the `code` label to the contract's codes (schema.ErrorCodes): any other (there
// should be none) counts as "other".
var errorCodes = schema.ErrorCodeNames()

func boundedCode(code string) string {
	if slices.Contains(errorCodes, code) {
		return code
	}
	return "other"
}

// published records one publication outcome: its counter, the per-minute figure of the operator's page,
// and one log line. Exactly one of res and p is set.
func (o *Observe) Published(channel string, start time.Time, res *schema.PublishResult, created bool, p *Problem) {
	if o == nil {
		return
	}
	outcome, code := OutcomeCreated, ""
	switch {
	case p != nil:
		outcome, code = OutcomeRefused, boundedCode(p.Body.Code)
	case !created:
		outcome = OutcomeDuplicate
	}
	if m := o.Metrics; m != nil {
		m.Published(channel, outcome, code)
	}
	if o.Publications == nil {
		return
	}
	fields := []zap.Field{zap.String("channel", channel), zap.String("outcome", outcome)}
	switch {
	case p != nil:
		fields = append(fields, zap.Int("status", p.Status), zap.String("code", code), zap.Int("details", len(p.Body.Details)))
	default:
		status := 200
		if created {
			status = 201
		}
		fields = append(fields, zap.Int("status", status), zap.String("id", res.ID), zap.String("type", res.Type),
			zap.String("emergency", res.EmergencySlug))
		if res.ContentMatches != nil {
			fields = append(fields, zap.Bool("content_matches", *res.ContentMatches))
		}
	}
	fields = append(fields, zap.Duration("duration", time.Since(start)))
	level := zap.InfoLevel
	switch {
	case p != nil && p.loggedOnce:
		// The store logs when such refusals start and stop; one line per request would flood the log
		// (416,456 WARN lines in 40 s on a full disk, onto that disk). They are counted all the same.
		level = zap.DebugLevel
	case p != nil && p.Status >= 500:
		level = zap.WarnLevel
	case p == nil && !created && res.ContentMatches != nil && *res.ContentMatches:
		// A faithful retry changes nothing: an app retrying a batch would fill the log with lines that say
		// nothing new (the metrics count them). A retry whose content differs stays at INFO.
		level = zap.DebugLevel
	}
	o.Publications.Log(level, "publication", fields...)
}

// ExportCut logs a whole export cut after its first byte: by the store (an error level: the client got
// part of the records), or by the client going away or not taking a page in time.
func (o *Observe) ExportCut(format string, records, bytes int64, start time.Time, byStore bool, err error) {
	if o == nil || o.Exports == nil {
		return
	}
	level, cause := zap.WarnLevel, "client"
	if byStore {
		level, cause = zap.ErrorLevel, "store"
	}
	o.Exports.Log(level, "export cut", zap.String("format", format), zap.String("cause", cause), zap.Error(err),
		zap.Int64("records", records), zap.Int64("bytes", bytes), zap.Duration("duration", time.Since(start)))
}

// ExportDeadlineFixed logs a whole export that cannot move its write deadline (the response writer does
// not reach the connection): the server's write timeout will cut it if it lasts longer.
func (o *Observe) ExportDeadlineFixed(format string, err error) {
	if o == nil || o.Exports == nil {
		return
	}
	o.Exports.Warn("export write deadline not moved: the server's write timeout will cut a longer export",
		zap.String("format", format), zap.Error(err))
}

// FeedEventNames are the label values of directaid_feed_events_total.
var FeedEventNames = []string{schema.EventPublished, schema.EventUpdated, schema.EventRemoved, schema.EventReconnect}

// feedSubscribers moves the gauge of open streams by d.
func (o *Observe) feedSubscribers(d int) {
	if o != nil && o.Metrics != nil {
		o.Metrics.FeedSubscribers(d)
	}
}

// FeedDelivered counts one event written to a subscriber.
func (o *Observe) FeedDelivered(event string) {
	if o != nil && o.Metrics != nil {
		o.Metrics.FeedDelivered(event)
	}
}

// RateLimited counts a 429 of zone (one of RateLimitZones); a publication over the limit is also a refused
// publication of its channel.
func (o *Observe) RateLimited(zone, publishChannel string) {
	if o == nil {
		return
	}
	if o.Metrics != nil {
		z := ZoneDetail
		if slices.Contains(RateLimitZones, zone) {
			z = zone
		}
		o.Metrics.RateLimited(z)
	}
	if zone == ZonePublish && publishChannel != "" {
		// Logged at DEBUG: a client hammering the limit would otherwise write a line per attempt.
		o.publishedRateLimited(publishChannel)
	}
}

func (o *Observe) publishedRateLimited(channel string) {
	if m := o.Metrics; m != nil {
		m.Published(channel, OutcomeRefused, schema.CodeRateLimited)
	}
	if o.Publications != nil {
		o.Publications.Debug("publication", zap.String("channel", channel), zap.String("outcome", OutcomeRefused),
			zap.Int("status", 429), zap.String("code", schema.CodeRateLimited))
	}
}

// ModerationActions are the label values of directaid_moderation_actions_total: Moderate's actions.
var ModerationActions = []string{ActionHide, ActionHidePhone, ActionRestore, ActionErase, ActionSetStatus, ActionRestoreResponse}

// moderated counts one moderation action (one of ModerationActions).
func (o *Observe) moderated(action string) {
	if o == nil || o.Metrics == nil || !slices.Contains(ModerationActions, action) {
		return
	}
	o.Metrics.Moderated(action)
}

// reported counts one community report by its reason (one of schema.ReportReasons) and outcome.
func (o *Observe) reported(reason, outcome string) {
	if o == nil || o.Metrics == nil {
		return
	}
	o.Metrics.Reported(reason, outcome)
}

// mcpCall counts one MCP tool call.
func (o *Observe) MCPCall(tool string, isError bool) {
	if o == nil || o.Metrics == nil {
		return
	}
	outcome := "ok"
	if isError {
		outcome = "error"
	}
	o.Metrics.MCPCall(tool, outcome)
}

// read times one read; view and format must come from the fixed sets (callers check them first).
func (o *Observe) Read(view, format string, start time.Time) {
	if o == nil || o.Metrics == nil {
		return
	}
	o.Metrics.Read(view, format, time.Since(start))
}

// EmergencyFigures are one emergency's records and the state of its report breakers.
type EmergencyFigures struct {
	Emergency string
	// Open counts the open records by type; Statuses every record by status (store.Statuses, all present).
	Open, Statuses map[string]int
	// PhonesPaused and RecordsPaused: automatic hiding by reports is paused (abuse.go).
	PhonesPaused, RecordsPaused bool
}

// EmergencyFigures are the figures of every configured emergency (active or not), from the store's
// per-emergency aggregates (a few keys per emergency, not a scan).
func (s *Service) EmergencyFigures(ctx context.Context) ([]EmergencyFigures, error) {
	slugs := make([]string, len(s.cfg.Emergencies))
	for i, e := range s.cfg.Emergencies {
		slugs[i] = e.Slug
	}
	aggs, err := s.store.Aggregates(ctx, slugs)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]EmergencyFigures, 0, len(slugs))
	for _, slug := range slugs {
		f := EmergencyFigures{Emergency: slug, Open: map[string]int{schema.TypeRequest: 0, schema.TypeOffer: 0}, Statuses: map[string]int{}}
		for _, st := range store.Statuses {
			f.Statuses[st] = 0
		}
		if a := aggs[slug]; a != nil {
			for k, n := range a.Counts {
				f.Open[k[0]] += n
			}
			for st, n := range a.Statuses {
				f.Statuses[st] += n
			}
		}
		// The breakers' shares are of the open records (emergencyRecords).
		f.PhonesPaused, f.RecordsPaused = s.hides.open(now, slug, f.Statuses[store.StatusOpen])
		out = append(out, f)
	}
	return out, nil
}
