// Package backend is directaid's domain, without Caddy and without a transport: the Service publishes,
// reads, exports, moderates, expires records and takes responses and reports over any store.Store
// (backend/store; Badger in backend/badgerstore, PostgreSQL in backend/pgstore). The transports are
// packages around it: the HTTP API and the site's wiring in backend/httpapi, the MCP server in
// backend/mcpserver; the Prometheus series in backend/metrics. A refusal is a *Problem: an HTTP status
// and the contract's error body, which every transport tells in its own way.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
)

// Emergency is one emergency as the operator declares it.
type Emergency struct {
	Slug       string `json:"slug"`
	Title      string `json:"title"`
	Summary    string `json:"summary,omitempty"`
	Location   string `json:"location,omitempty"`
	OccurredOn string `json:"occurred,omitempty"` // YYYY-MM-DD
	Inactive   bool   `json:"inactive,omitempty"`
	// Area is where the emergency is: DIVIPOLA codes of departamentos or municipios.
	Area []string `json:"area,omitempty"`
	// Lines are the phone lines its pages show, beside «Rescate»; none: schema.DefaultLines.
	Lines []schema.PhoneLine `json:"lines,omitempty"`
	// RequestTTL and OfferTTL are how long a new or renewed open record stays open (0: the defaults).
	RequestTTL time.Duration `json:"request_ttl,omitempty"`
	OfferTTL   time.Duration `json:"offer_ttl,omitempty"`
}

// Config is what the operator sets; a reload builds a new Service over the same Store.
type Config struct {
	// PublicURL is the absolute base of links (https://ayuda.example.org); empty derives it per request.
	PublicURL   string
	Emergencies []Emergency
	// RateLimits are the budgets of Zones, by name, as the Caddyfile enforces them; discovery and the
	// site publish them. A zone left out is not published.
	RateLimits map[string]Limit
	// Observe receives metrics and the publication log; nil observes nothing.
	Observe *Observe
	// HideAfterReports is how many distinct reporters hide a record (0: defaultHideAfterReports).
	HideAfterReports int
	// OperatorContact tells people how to reach whoever runs the site (the party responsible for their
	// data, as Ley 1581 asks): shown in every page's footer and on /privacidad; empty shows none.
	OperatorContact string
	// ExportWriter, if set, wraps the writer of a whole export, which moves its write deadline page by page
	// (http.ResponseController): the host's way to let that deadline pass its own write timeout.
	ExportWriter func(http.ResponseWriter, *http.Request) http.ResponseWriter
	// FeedStreams and FeedStreamsPerClient bound the open streams of the live feed, on this node and per
	// client address (0: 1000 and 4).
	FeedStreams, FeedStreamsPerClient int
	// Responded, if set, is told of each new response once it is stored, before the answer (the webhooks'
	// response events).
	Responded func(ctx context.Context, recordID, responseID string)
	// Windows are the abuse bounds' windows (what reports hid, what responses added to the counts within
	// the hour or the 48 hours): the host keeps one per database and gives it to every Service it builds
	// over that database, so that a reload resets none of them. Nil: the Service makes its own.
	Windows *AbuseWindows
}

// AbuseWindows hold what the abuse bounds (abuse.go) counted within their windows, in memory.
type AbuseWindows struct {
	hides     *hideBudget
	counted   *countBudget
	perRecord *recordShare
}

// NewAbuseWindows returns empty windows.
func NewAbuseWindows() *AbuseWindows {
	return &AbuseWindows{hides: newHideBudget(), counted: newCountBudget(), perRecord: newRecordShare()}
}

// Service publishes records: validation, emergency selection, idempotency.
type Service struct {
	store  store.Store
	cfg    Config
	active []Emergency
	now    func() time.Time
	// ids makes a new record's id (store.NewIDNear; tests force collisions with another).
	ids store.IDSource
	// hides bounds what community reports hide by themselves, counted what one network's responses add to
	// the public counts (abuse.go): cfg.Windows', shared by copies of the Service and across reloads.
	hides   *hideBudget
	counted *countBudget
	// perRecord bounds what one network responds to one record (abuse.go), cfg.Windows' too.
	perRecord *recordShare
	// secrets caches the store's secrets (manage.go); a pointer, so that Service stays copyable.
	secrets *secrets
	// feed is the live feed's poller and subscribers (feed.go).
	feed *feedHub
	// exports holds a place per whole export running (export.go), WholeExports at most.
	exports *exportPlaces
}

// NewService returns a service over store with cfg.
func NewService(st store.Store, cfg Config) *Service {
	w := cfg.Windows
	if w == nil {
		w = NewAbuseWindows()
	}
	s := &Service{store: st, cfg: cfg, now: time.Now, ids: store.NewIDNear, hides: w.hides, counted: w.counted, perRecord: w.perRecord, secrets: &secrets{},
		exports: &exportPlaces{per: map[string]int{}}}
	s.feed = newFeedHub(s)
	for _, e := range cfg.Emergencies {
		if !e.Inactive {
			s.active = append(s.active, e)
		}
	}
	return s
}

// Config is the configuration the service was built with.
func (s *Service) Config() Config { return s.cfg }

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// Observe is where the service reports its metrics and its publication log (nil observes nothing).
func (s *Service) Observe() *Observe { return s.cfg.Observe }

// CloseFeed ends the live feed's streams (each is told to reconnect) and its poller: the config is going
// away (a reload or a stop).
func (s *Service) CloseFeed() { s.feed.close() }

// baseURL is the public base for links (webutil.BaseURL); Handler.ServeHTTP refuses a request whose Host
// could not be part of one before anything builds a link from it.
func (s *Service) BaseURL(r *http.Request) string {
	base, _ := webutil.BaseURL(s.cfg.PublicURL, r)
	return base
}

// activeEmergencies returns the active emergencies with their links, as discovery and MCP list them.
func (s *Service) ActiveEmergencies(base string) []schema.EmergencyInfo {
	out := make([]schema.EmergencyInfo, 0, len(s.active))
	for _, e := range s.active {
		out = append(out, schema.EmergencyInfo{
			Slug: e.Slug, Title: e.Title, Summary: e.Summary, Location: e.Location, OccurredOn: e.OccurredOn,
			Area: e.Area, Lines: e.Lines, Links: schema.EmergencyLinks(base, e.Slug),
		})
	}
	return out
}

// Problem is a refused publication: an HTTP status and the error body.
type Problem struct {
	Status int
	Body   schema.ErrorBody
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
	// Challenge is sent as WWW-Authenticate when set (a 401).
	Challenge string
	// Zone is the rate limit that refused the request (a 429), one of Zones.
	Zone string
	// loggedOnce: its cause is logged where it starts and stops (the store's write state), so the
	// publication log takes it at DEBUG, not a WARN line per request.
	loggedOnce bool
}

func (p *Problem) Error() string { return p.Body.Code + ": " + p.Body.Error }

func BadRequest(b *schema.ErrorBody) *Problem {
	b.Cap()
	return &Problem{Status: http.StatusBadRequest, Body: *b}
}

// Publish validates body (a JSON request or offer; forcedType fixes the type for MCP tools) and stores it
// unless its (source, externalId) exists. created tells 201 from 200. client is the address of the client
// that sent it (ClientIP): the manage token goes to the first answer, and to a retry of the same content
// from the same network (ClientNet) only. Everything else a retry compares is public (a record's detail
// shows its content), and an application's externalId may be guessed («caso-124»): the network is what a
// stranger who copies a detail does not share with the publisher.
func (s *Service) Publish(ctx context.Context, base string, body []byte, forcedType, client string) (res *schema.PublishResult, created bool, err error) {
	pub, masked, err := s.validate(body, forcedType)
	if err != nil {
		return nil, false, err
	}
	publisher, err := s.publisherKey(ctx, client)
	if err != nil {
		return nil, false, err
	}
	disowned, err := s.phoneDisowned(ctx, pub.ContactE164, publisher)
	if err != nil {
		return nil, false, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	rec := &store.Record{ID: s.ids(now, pub.Latitude, pub.Longitude), CreatedAt: now, Publication: *pub, Status: store.StatusOpen,
		ExpiresAt: now.Add(s.ttl(pub.EmergencySlug, pub.Type)), Publisher: publisher, ContactHidden: disowned}
	stored, created, err := s.create(ctx, rec, pub)
	if err != nil {
		return nil, false, err
	}
	stored = readAt(stored, now) // a retry long after: its record may be past its expiresAt
	res = &schema.PublishResult{
		OK: true, Duplicate: !created, ID: stored.ID, Type: stored.Type, EmergencySlug: stored.EmergencySlug,
		CreatedAt: stored.CreatedAt, PublicURL: base + schema.RecordPath(stored.ID), Status: stored.Status,
		Warnings: append(s.warnings(&stored.Publication, true), maskedWarnings(masked)...),
	}
	if stored.Status == store.StatusOpen && !stored.ExpiresAt.IsZero() {
		e := stored.ExpiresAt.UTC()
		res.ExpiresAt = &e
	}
	same := created
	if !created {
		// A withdrawn record's stored content lost its contact: a retry never matches it, never gets the token.
		same = sameContent(stored, pub, publisher)
		res.ContentMatches = &same
	}
	// A number not shown (disowned here, or reported as not its publisher's since) is said on every answer
	// about the record: the first may not have arrived, and a bot retrying would tell its person they
	// can be reached.
	if stored.ContactHidden && stored.Status != store.StatusWithdrawn && (disowned || same) {
		res.Warnings = append(res.Warnings, disownedWarning)
	}
	res.Warnings = append(res.Warnings, pairWarnings(stored, same, publisher)...)
	if same && !created && !samePublisher(stored.Publisher, publisher) {
		res.Warnings = append(res.Warnings, tokenWithheldWarning) // else a relay with several addresses never learns why
	}
	if same && (created || samePublisher(stored.Publisher, publisher)) {
		// Only the publisher (the first answer, or a retry of exactly its content from its network) gets the token.
		if res.ManageToken, err = s.manageToken(ctx, stored); err != nil {
			return nil, false, err
		}
		res.ManageURL = schema.ManageURL(base, stored.ID, res.ManageToken)
	}
	return res, created, nil
}

// create stores rec (pub's record) and, when it is new, wakes this node's feed poller so that its
// subscribers see it at once.
func (s *Service) create(ctx context.Context, rec *store.Record, pub *schema.Publication) (*store.Record, bool, error) {
	stored, created, err := s.createCompleting(ctx, rec, pub)
	if created {
		s.feed.Wake()
	}
	return stored, created, err
}

// createCompleting stores rec through the store's Create. The municipio of a point located by
// coordinates alone is searched only for a record to store: a retry of the same point takes its stored
// record's (the same search of the same point gave it), so a retry never searches the places.
func (s *Service) createCompleting(ctx context.Context, rec *store.Record, pub *schema.Publication) (*store.Record, bool, error) {
	if !schema.NeedsMunicipio(pub) {
		return s.store.Create(ctx, rec)
	}
	c, ok := s.store.(store.Completer) // optional: store.Completer says why
	if !ok {
		schema.FillMunicipio(&rec.Publication)
		pub.MunicipioCode = rec.MunicipioCode
		return s.store.Create(ctx, rec)
	}
	stored, created, err := c.CreateCompleting(ctx, rec, func(r *store.Record) { schema.FillMunicipio(&r.Publication) })
	switch {
	case err != nil:
	case rec.MunicipioCode != "": // searched: a new record, or one another request stored meanwhile
		pub.MunicipioCode = rec.MunicipioCode
	case stored.MunicipioCode != "" && stored.PlaceCode == "" && samePoint(&stored.Publication, pub):
		pub.MunicipioCode = stored.MunicipioCode
	default: // a retry from another point (or a record from before municipios): compared as it is
		schema.FillMunicipio(pub)
	}
	return stored, created, err
}

func samePoint(a, b *schema.Publication) bool {
	return a.Latitude != nil && a.Longitude != nil && b.Latitude != nil && b.Longitude != nil &&
		*a.Latitude == *b.Latitude && *a.Longitude == *b.Longitude
}

// validate applies every rule of a publication to body and returns what would be stored, with the
// pointers of the texts that had a phone number hidden (maskPhones); the municipio of a point located
// by coordinates alone is left to create (schema.NeedsMunicipio).
func (s *Service) validate(body []byte, forcedType string) (*schema.Publication, []string, error) {
	pub, eb := schema.Decoder{MunicipioLater: true}.Decode(body, forcedType)
	if eb != nil {
		s.addEmergencyDetail(eb, body)
		return nil, nil, BadRequest(eb)
	}
	if p := s.selectEmergency(pub); p != nil {
		return nil, nil, p
	}
	return pub, maskPhones(pub), nil
}

// maskPhones hides the digits of the phone numbers typed in pub's texts (schema.MaskPhones) and returns
// the pointers of the texts it changed. A publication's contact is its contactWhatsapp, shown only with the
// person's consent and hidden when someone reports it as theirs; a number in a text would escape both,
// and reach lists, exports and searches, which carry no phone.
func maskPhones(pub *schema.Publication) []string {
	var out []string
	for _, f := range []struct {
		ptr  string
		text *string
	}{{"/title", &pub.Title}, {"/description", &pub.Description}, {"/contactName", &pub.ContactName},
		{"/address", &pub.Address}, {"/neighborhood", &pub.Neighborhood}} { // the order of maskedTexts
		if masked, ok := schema.MaskPhones(*f.text); ok {
			*f.text = masked
			out = append(out, f.ptr)
		}
	}
	return out
}

// pairWarnings are the warnings of a publication of stored's pair from publisher's network whose content
// is the same or not: pair_taken when it is not this client's retry, most likely (someone else took the
// pair first: an app's externalIds may be guessed), pair_reused when it is this network's other content
// (an externalId used twice, an example copied as it is), so that the 200 does not read as «published» to
// a bot that checks only the status.
func pairWarnings(stored *store.Record, same bool, publisher string) []schema.Warning {
	switch {
	case same, stored.Status == store.StatusWithdrawn:
		// A withdrawn record's content lost its contact, so no retry matches it: its status says what
		// happened, and «other content» would be false (and push a bot to publish what its person took down).
		return nil
	case samePublisher(stored.Publisher, publisher):
		return []schema.Warning{pairReusedWarning}
	}
	return []schema.Warning{pairTakenWarning}
}

// pairReusedWarning tells a client that the pair it sent holds other content it published before, and that
// nothing it sent was stored: a retry never changes a publication.
var pairReusedWarning = schema.Warning{Code: schema.CodePairReused, Field: "/externalId", Message: "Ya hay una publicación con este " +
	"source y externalId, con otro contenido: lo enviado NO se guardó (un reintento no cambia una publicación). Para publicar otra, " +
	"use un externalId nuevo; para cambiar el estado de la que existe, use sus acciones con el código para gestionar."}

// pairTakenWarning tells a client that the pair it sent holds another network's other content, and that
// nothing it sent was stored.
var pairTakenWarning = schema.Warning{Code: schema.CodePairTaken, Field: "/externalId", Message: "Ya hay una publicación con este " +
	"source y externalId, enviada desde otra red y con otro contenido: lo enviado NO se guardó. Si no es suya, publique de nuevo con " +
	"un externalId propio y difícil de adivinar (p. ej. un UUID)."}

// tokenWithheldWarning tells a client that retried a publication exactly, from another network than the
// one that published it, why the answer has no manage token.
var tokenWithheldWarning = schema.Warning{Code: schema.CodeManageTokenWithheld, Field: "/externalId", Message: "Es la misma " +
	"publicación, ya guardada; el código para gestionarla (manageToken) solo se entrega de nuevo a un reintento desde la red que " +
	"la publicó (la misma dirección IPv4 o red IPv6 /64): use el de la primera respuesta."}

// disownedWarning tells a publisher that the number they gave is not shown: someone said it is not
// theirs to publish (phoneDisowned).
var disownedWarning = schema.Warning{Code: schema.CodePhoneDisowned, Field: "/contactWhatsapp", Message: "La publicación no muestra " +
	"este número de WhatsApp, así que nadie podrá escribirle por él: alguien informó que no es de quien lo publica. Si el número es suyo, " +
	"pida a quien opera este servicio que revise el reporte; si no, publique con un número de contacto propio."}

// maskedTexts name the texts maskPhones reads, in the words of the people who wrote them (a warning is
// shown to them; its field names the field for programs).
var maskedTexts = map[string]string{"/title": "El título", "/description": "La descripción",
	"/contactName": "El nombre de contacto", "/address": "La dirección", "/neighborhood": "El barrio"}

// maskedWarnings tell the publisher which texts had a phone number hidden.
func maskedWarnings(fields []string) []schema.Warning {
	out := make([]schema.Warning, 0, len(fields))
	for _, f := range fields {
		out = append(out, schema.Warning{Code: schema.CodePhoneInText, Field: f, Message: fmt.Sprintf(
			"%s tenía un número de teléfono: se publica con sus cifras ocultas (%s). El número de contacto va en «WhatsApp de contacto»: se muestra solo con el permiso de la persona, y se oculta si alguien dice que es suyo.",
			maskedTexts[f], strings.Repeat(string(schema.PhoneMask), 3))})
	}
	return out
}

// dryRun validates body exactly as publish does, and stores nothing: the answer to dryRun=true. A pair
// already stored is told as publish would tell it: a duplicate, whether the content matches, its id.
// client is the address of the client (as for Publish).
func (s *Service) DryRun(ctx context.Context, base string, body []byte, forcedType, client string) (*schema.DryRunResult, error) {
	pub, masked, err := s.validate(body, forcedType)
	if err != nil {
		return nil, err
	}
	schema.FillMunicipio(pub)
	res := &schema.DryRunResult{OK: true, DryRun: true, Record: *pub, Warnings: append(s.warnings(pub, false), maskedWarnings(masked)...)}
	publisher, err := s.publisherKey(ctx, client)
	if err != nil {
		return nil, err
	}
	if disowned, err := s.phoneDisowned(ctx, pub.ContactE164, publisher); err != nil {
		return nil, err
	} else if disowned {
		res.Warnings = append(res.Warnings, disownedWarning)
	}
	stored, err := s.store.Lookup(ctx, pub.Source, pub.ExternalID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return res, nil
	case err != nil:
		return nil, err
	}
	stored = readAt(stored, s.now())
	same := sameContent(stored, pub, publisher)
	res.Duplicate, res.ContentMatches, res.ID, res.Status = true, &same, stored.ID, stored.Status
	res.Warnings = append(res.Warnings, pairWarnings(stored, same, publisher)...)
	res.PublicURL = base + schema.RecordPath(stored.ID)
	return res, nil
}

// sameContent is what contentMatches tells the client of network publisher of pub, a retry of stored
// (as readAt reads it). Its publisher compares everything; another network, when stored does not show
// its phone (a report hid it or the record, it expired), compares without the phone: else contentMatches would tell a
// stranger who knows the pair whether a number guessed is the hidden one. The manage token still needs
// the publisher's network and the whole content.
func sameContent(stored *store.Record, pub *schema.Publication, publisher string) bool {
	if samePublisher(stored.Publisher, publisher) || (contactShown(stored) && listed(stored.Status)) {
		return samePublication(&stored.Publication, pub)
	}
	p := *pub
	p.ContactWhatsapp, p.ContactE164 = stored.ContactWhatsapp, stored.ContactE164
	return samePublication(&stored.Publication, &p)
}

// samePublication reports whether a and b are the same content: they would marshal to the same JSON.
// A Publication holds strings, booleans and pointers to numbers only, so the pointees are compared (bit for
// bit, as their JSON differs for 0 and -0) and the rest with ==, without marshalling both on every retry.
// A field of another kind makes Publication incomparable (a slice, a map) or is caught by
// TestSamePublicationComparesEveryField (a pointer). One difference is no difference of content: the
// same number written another way (contactWhatsapp «300 123 4567» and «3001234567», one contactE164).
func samePublication(a, b *schema.Publication) bool {
	if !sameFloat(a.Latitude, b.Latitude) || !sameFloat(a.Longitude, b.Longitude) || !samePtr(a.NeededPeople, b.NeededPeople) {
		return false
	}
	x, y := *a, *b
	x.Latitude, x.Longitude, x.NeededPeople = nil, nil, nil
	y.Latitude, y.Longitude, y.NeededPeople = nil, nil, nil
	if x.ContactE164 != "" && x.ContactE164 == y.ContactE164 {
		x.ContactWhatsapp = y.ContactWhatsapp
	}
	return x == y
}

func sameFloat(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || math.Float64bits(*a) == math.Float64bits(*b))
}

func samePtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// addEmergencyDetail adds to a refused body's details what the emergency rules say of its emergencySlug,
// so that every fault is reported at once: an agent that lacks both consent and the emergency asks the
// person both questions in one go.
func (s *Service) addEmergencyDetail(eb *schema.ErrorBody, body []byte) {
	if eb.Code == schema.CodeInvalidJSON || slices.ContainsFunc(eb.Details, func(d schema.FieldError) bool { return d.Field == "/emergencySlug" }) {
		return
	}
	var b struct {
		EmergencySlug *string `json:"emergencySlug"`
	}
	if json.Unmarshal(body, &b) != nil {
		return
	}
	pub := &schema.Publication{}
	if b.EmergencySlug != nil {
		pub.EmergencySlug = strings.TrimSpace(*b.EmergencySlug)
	}
	if p := s.selectEmergency(pub); p != nil {
		eb.Details = append(eb.Details, p.Body.Details...)
		// The missing consent stays the top code only while it is at least half of what is wrong
		// (schema.Decode's rule), counted with the emergency's detail.
		if eb.Code == schema.CodeConsentRequired && len(eb.Details) > 2 {
			eb.Code, eb.Error = schema.CodeInvalidBody, "Datos inválidos: revise los campos indicados en details."
		}
	}
}

// selectEmergency applies DESIGN.md's rules and fills pub.EmergencySlug.
func (s *Service) selectEmergency(pub *schema.Publication) *Problem {
	slugs := make([]string, len(s.active))
	for i, e := range s.active {
		slugs[i] = e.Slug
	}
	list := strings.Join(slugs, ", ")
	switch {
	case len(s.active) == 0:
		return BadRequest(&schema.ErrorBody{Code: schema.CodeNoActiveEmergency,
			Error: "No hay ninguna emergencia activa en este momento: no se pueden publicar registros."})
	case pub.EmergencySlug != "":
		for _, e := range s.active {
			if e.Slug == pub.EmergencySlug {
				return nil
			}
		}
		msg := fmt.Sprintf("«emergencySlug» %s no es una emergencia activa; emergencias activas: %s", schema.Quote(pub.EmergencySlug), list)
		return BadRequest(&schema.ErrorBody{Code: schema.CodeUnknownEmergency, Error: "Emergencia desconocida o inactiva: " + msg + ".",
			Details: []schema.FieldError{{Field: "/emergencySlug", Message: msg, Allowed: slugs}}})
	case len(s.active) == 1:
		pub.EmergencySlug = s.active[0].Slug
		return nil
	default:
		msg := fmt.Sprintf("«emergencySlug» es obligatorio porque hay varias emergencias activas: %s", list)
		return BadRequest(&schema.ErrorBody{Code: schema.CodeEmergencyRequired, Error: "Falta la emergencia: " + msg + ".",
			Details: []schema.FieldError{{Field: "/emergencySlug", Message: msg, Allowed: slugs}}})
	}
}

// AsProblem maps any error from publish to the answer a client gets.
func AsProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	if errors.Is(err, store.ErrUnavailable) {
		// The store refuses writes for now (the disk is nearly full): reads go on, and it recovers by itself.
		return &Problem{Status: http.StatusServiceUnavailable, RetryAfter: 60, loggedOnce: true, Body: schema.ErrorBody{Code: schema.CodeUnavailable,
			Error: "El servicio no puede guardar publicaciones en este momento; las consultas siguen funcionando. Reintente en unos minutos con el mismo externalId (no se duplicará)."}}
	}
	if errors.Is(err, store.ErrUnreachable) {
		// The database cannot be reached for now (a PostgreSQL restart or failover): seconds, not minutes.
		return &Problem{Status: http.StatusServiceUnavailable, RetryAfter: 2, Body: schema.ErrorBody{Code: schema.CodeUnavailable,
			Error: "El servicio no pudo completar la operación porque la base de datos no responde; reintente en unos segundos con el mismo externalId (no se duplicará)."}}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrClosed) {
		return &Problem{Status: http.StatusServiceUnavailable, Body: schema.ErrorBody{Code: schema.CodeUnavailable,
			Error: "El servicio no pudo completar la publicación; reintente con el mismo externalId (no se duplicará)."}}
	}
	return &Problem{Status: http.StatusInternalServerError, Body: schema.ErrorBody{Code: schema.CodeInternalError,
		Error: "Error interno al guardar; reintente con el mismo externalId (no se duplicará)."}}
}

// ExampleEmergency is the emergency the served OpenAPI document's examples publish into: the first active
// one (or, with none active, the first declared), so that its examples work on this server as written.
func (s *Service) ExampleEmergency() schema.ExampleEmergency {
	for _, list := range [][]Emergency{s.active, s.cfg.Emergencies} {
		if len(list) > 0 {
			return schema.ExampleEmergency{Slug: list[0].Slug, Title: list[0].Title}
		}
	}
	return schema.DefaultExampleEmergency
}
