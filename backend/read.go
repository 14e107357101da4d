package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The read side of the service: what view=list|detail|panorama and the MCP read tools answer. Inputs
// are validated here, once, for both; FieldError.Field names the parameter bare (limit), and each
// surface adds its own prefix (/query/limit on HTTP, /limit in MCP).

func InvalidParams(details []schema.FieldError) *Problem {
	msg := "Parámetros inválidos: revise details."
	if len(details) == 1 {
		if msg = "Parámetro inválido: " + details[0].Message; !strings.HasSuffix(msg, "?") {
			msg += "." // a question («¿quiso decir …?») ends itself
		}
	}
	return BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidParameter, Error: msg, Details: details})
}

func ParamError(name, msg string, allowed ...string) schema.FieldError {
	return schema.FieldError{Field: name, Message: msg, Allowed: allowed}
}

// knownSlugs are every emergency the operator declared, active or not: their records stay readable.
func (s *Service) knownSlugs() []string {
	out := make([]string, len(s.cfg.Emergencies))
	for i, e := range s.cfg.Emergencies {
		out[i] = e.Slug
	}
	return out
}

// emergency is the declared emergency of slug, active or not.
func (s *Service) emergency(slug string) (Emergency, bool) {
	for _, e := range s.cfg.Emergencies {
		if e.Slug == slug {
			return e, true
		}
	}
	return Emergency{}, false
}

// unknownSlug is the error of a parameter (field: its name or pointer) that names no declared emergency.
func (s *Service) unknownSlug(field, slug string) schema.FieldError {
	known := s.knownSlugs()
	return ParamError(field, fmt.Sprintf("«emergencySlug» no admite %s; valores permitidos: %s", schema.Quote(slug), strings.Join(known, ", ")), known...)
}

// EmergencyArea is the area of the declared emergency slug, active or not (nil for another slug): where
// its places are looked for first.
func (s *Service) EmergencyArea(slug string) []string {
	e, _ := s.emergency(slug)
	return e.Area
}

func (s *Service) EmergencyTitle(slug string) string {
	if e, ok := s.emergency(slug); ok {
		return e.Title
	}
	return slug
}

// listSpec validates q and turns it into a store query; q is normalized in place (defaults applied,
// strings trimmed) so that it can be echoed as `filters`.
func (s *Service) listSpec(q *schema.ListQuery) (*store.ListSpec, []schema.FieldError) {
	var errs []schema.FieldError
	enum := func(name string, v *string, allowed []string) {
		*v = strings.TrimSpace(*v)
		if *v != "" && !slices.Contains(allowed, *v) {
			errs = append(errs, ParamError(name, fmt.Sprintf("«%s» no admite %s; valores permitidos: %s", name, schema.Quote(*v), strings.Join(allowed, ", ")), allowed...))
		}
	}
	enum("emergencySlug", &q.EmergencySlug, s.knownSlugs())
	enum("type", &q.Type, []string{schema.TypeRequest, schema.TypeOffer})
	enum("category", &q.Category, schema.Categories)
	enum("urgency", &q.Urgency, schema.Urgencies)
	enum("total", &q.Total, []string{schema.TotalExact, schema.TotalNone})
	enum("status", &q.Status, schema.ListedStatuses)
	enum("attended", &q.Attended, []string{"true", "false"})
	spec := &store.ListSpec{EmergencySlug: q.EmergencySlug, Type: q.Type, Category: q.Category, Urgency: q.Urgency, Status: q.Status, NoTotal: q.Total == schema.TotalNone}
	if q.Municipio = strings.TrimSpace(q.Municipio); q.Municipio != "" {
		switch ms := places.Municipios(q.Municipio); len(ms) {
		case 1:
			q.Municipio, spec.Municipio = ms[0].Code, ms[0].Code
		case 0:
			msg := fmt.Sprintf("«municipio» %s no es el código DIVIPOLA (5 dígitos) ni el nombre de ningún municipio", schema.Quote(q.Municipio))
			hint := centroPobladoHint(q.Municipio)
			if hint == "" {
				hint = s.municipioGuess(q.Municipio, q.EmergencySlug)
			}
			errs = append(errs, ParamError("municipio", msg+hint))
		default:
			var names []string
			for _, m := range ms {
				names = append(names, m.Code+" "+places.Label(m))
			}
			errs = append(errs, ParamError("municipio", fmt.Sprintf("«municipio» %s nombra varios municipios: dé su código (%s) o añada el departamento", schema.Quote(q.Municipio), strings.Join(names, ", "))))
		}
	}
	q.Q = strings.TrimSpace(q.Q)
	if n := utf8.RuneCountInString(q.Q); n > schema.MaxQueryRunes {
		errs = append(errs, ParamError("q", fmt.Sprintf("«q» admite como máximo %d caracteres (tiene %d)", schema.MaxQueryRunes, n)))
	} else if q.Q != "" {
		spec.Words = store.QueryWords(q.Q)
	}
	finite := func(name string, v *float64, lo, hi float64) {
		if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
			errs = append(errs, ParamError(name, fmt.Sprintf("«%s» debe ser un número entre %g y %g", name, lo, hi)))
		}
	}
	finite("latitude", q.Latitude, -90, 90)
	finite("longitude", q.Longitude, -180, 180)
	switch {
	case q.Latitude != nil && q.Longitude != nil:
		spec.Near, spec.Lat, spec.Lon = true, *q.Latitude, *q.Longitude
		if q.RadiusKm == nil {
			r := float64(schema.DefaultRadiusKm)
			q.RadiusKm = &r
		}
		if r := *q.RadiusKm; math.IsNaN(r) || r <= 0 || r > schema.MaxRadiusKm {
			errs = append(errs, ParamError("radiusKm", fmt.Sprintf("«radiusKm» debe ser mayor que 0 y como máximo %d", schema.MaxRadiusKm)))
		}
		spec.RadiusKm = *q.RadiusKm
	case q.Latitude != nil:
		errs = append(errs, ParamError("longitude", "«longitude» es obligatorio junto con «latitude»"))
	case q.Longitude != nil:
		errs = append(errs, ParamError("latitude", "«latitude» es obligatorio junto con «longitude»"))
	case q.RadiusKm != nil:
		errs = append(errs, ParamError("radiusKm", "«radiusKm» solo se usa con «latitude» y «longitude»"))
	}
	var after *store.Cursor // since is the id of an event of the live feed: after that change
	if q.Since = strings.TrimSpace(q.Since); q.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, q.Since)
		if strings.Contains(q.Since, "~") {
			var p feedPos
			if p, err = parseFeedPos(q.Since); err == nil {
				t, after = p.spec(store.ListSpec{}).Since, p.spec(store.ListSpec{}).After
			}
		}
		if err != nil {
			errs = append(errs, ParamError("since", fmt.Sprintf("«since» debe ser una fecha y hora RFC 3339, p. ej. 2026-08-11T14:30:00Z, o el id de un evento del flujo %s, p. ej. 2026-08-11T14:30:00.123Z~01k2x3y4z5a6b7c8 (se recibió %s)", schema.EventsPath, schema.Quote(q.Since))))
		}
		spec.Since = t
		if err == nil && t.Before(time.UnixMilli(0)) {
			// Every change, as since=1970-01-01T00:00:00Z: Go's zero time, where a mirror starts, is not "no since".
			spec.Since = time.UnixMilli(0).UTC()
		}
		if spec.Near || len(spec.Words) > 0 || spec.Municipio != "" {
			errs = append(errs, ParamError("since", "«since» no se combina con «q», «municipio» ni «latitude»/«longitude»: sincronice con since y filtre en su copia"))
		}
	}
	if q.Limit == 0 {
		q.Limit = schema.DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > schema.MaxListLimit {
		errs = append(errs, ParamError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxListLimit)))
	}
	spec.Limit = q.Limit
	if len(errs) > 0 {
		return nil, errs
	}
	spec.After = after
	if q.Cursor = strings.TrimSpace(q.Cursor); q.Cursor != "" {
		c, err := spec.DecodeCursor(q.Cursor)
		switch {
		case errors.Is(err, store.ErrCursorMismatch):
			return nil, []schema.FieldError{ParamError("cursor", "«cursor» se hizo para otros filtros: repita los mismos filtros de la página anterior")}
		case err != nil:
			return nil, []schema.FieldError{ParamError("cursor", "«cursor» no es válido: use el nextCursor de la respuesta anterior tal cual")}
		}
		spec.After = c
	}
	return spec, nil
}

// listHelp answers a list query (view=list, buscar_ayudas). Errors are *Problem for bad input.
func (s *Service) List(ctx context.Context, base string, q schema.ListQuery) (*schema.HelpList, error) {
	spec, errs := s.listSpec(&q)
	if errs != nil {
		return nil, InvalidParams(errs)
	}
	// A change feed of one status is the feed of every status, where a record of another comes as a
	// tombstone: a copy of the open records must learn that one was resolved, withdrawn or hidden.
	// The cursor stays the one of the filters as asked (spec).
	read, keep := spec, ""
	if !spec.Since.IsZero() && spec.Status != "" {
		every := *spec
		read, keep, every.Status = &every, spec.Status, ""
	}
	now := s.now()
	res, counts, err := s.listCounted(ctx, read, q.Attended, now)
	if err != nil {
		return nil, err
	}
	out := &schema.HelpList{
		GeneratedAt: s.now().UTC(), Total: res.Total, TotalExact: res.TotalExact, Returned: len(res.Records),
		Filters: q, Items: make([]schema.PublicHelp, 0, len(res.Records)),
	}
	for i, rec := range res.Records {
		rec = readAt(rec, now)
		if !listed(rec.Status) || (keep != "" && rec.Status != keep) { // only a change feed has them: a tombstone, no content
			out.Removed = append(out.Removed, schema.Tombstone{ID: rec.ID, Status: rec.Status, UpdatedAt: rec.UpdatedAt.UTC()})
			continue
		}
		item := listItem(s, base, spec, res, i, rec)
		item.Responses = counts[rec.ID]
		out.Items = append(out.Items, item)
	}
	if res.Next != nil {
		out.NextCursor = spec.EncodeCursor(res.Next)
	}
	return out, nil
}

// listItem is rec, the i-th record of res (as readAt reads it), as a list shows it: with its distance
// (to the metre) in a radius list, and its contact without the phone.
func listItem(s *Service, base string, spec *store.ListSpec, res *store.ListResult, i int, rec *store.Record) schema.PublicHelp {
	var dist *float64
	if spec.Near {
		d := math.Round(res.Distances[i]*1000) / 1000
		dist = &d
	}
	return schema.PublicHelp(publicRecord(s, base, rec, dist, schema.PublicContact{Name: rec.ContactName, Available: contactShown(rec)}))
}

func publicRecord[C any](s *Service, base string, rec *store.Record, dist *float64, contact C) schema.HelpRecord[C] {
	out := schema.HelpRecord[C]{
		ID: rec.ID, Type: rec.Type, Emergency: schema.EmergencyRef{Slug: rec.EmergencySlug, Title: s.EmergencyTitle(rec.EmergencySlug)},
		Content: rec.Content, Needs: rec.Needs, CenterStatus: rec.CenterStatus, Contact: contact,
		CreatedAt: rec.CreatedAt.UTC(), Status: rec.Status, UpdatedAt: rec.UpdatedAt.UTC(), PublicURL: base + schema.RecordPath(rec.ID),
	}
	if rec.Status == store.StatusOpen && !rec.ExpiresAt.IsZero() {
		e := rec.ExpiresAt.UTC()
		out.ExpiresAt = &e
	}
	if rec.Place != (schema.Place{}) {
		out.Location = &schema.PublicLocation{Place: rec.Place, DistanceKm: dist, Precision: rec.LocationPrecision}
		if p, ok := places.Lookup(rec.PlaceCode); ok {
			out.Location.PlaceCode, out.Location.PlaceName = p.Code, places.Label(p)
		}
		if m, ok := places.Lookup(rec.MunicipioCode); ok {
			out.Location.MunicipioCode, out.Location.Municipio = m.Code, places.Label(m)
		}
	}
	return out
}

// listed reports whether a record of status st has public content (withdrawn and hidden ones do not).
func listed(st string) bool { return slices.Contains(schema.ListedStatuses, st) }

// goneRecord is the problem of a detail read of a withdrawn or hidden record.
func goneRecord(st string) *Problem {
	msg := "Esta publicación fue retirada (por quien la publicó o por el operador) y sus datos personales se borraron."
	if st == store.StatusHidden {
		msg = "Esta publicación está oculta mientras se revisan reportes de la comunidad."
	}
	return &Problem{Status: http.StatusGone, Body: schema.ErrorBody{Code: schema.CodeGone, Error: msg, RecordStatus: st}}
}

// badIDMessage tells that id (as given: before store.NormalizeID, at most 40 characters of it) is not a
// record id.
func badIDMessage(id string) string {
	return fmt.Sprintf("«id» %s no tiene la forma de un id (16 caracteres, p. ej. 01k2x3y4z5a6b7c8)", schema.Quote(id))
}

// unknownRecord is the problem of a detail read of an id that does not exist.
func unknownRecord(id string) *Problem {
	return &Problem{Status: http.StatusNotFound, Body: schema.ErrorBody{Code: schema.CodeNotFound,
		Error: fmt.Sprintf("No existe ningún registro con id %q.", id)}}
}

// helpDetail answers view=detail and ver_ayuda: one record with its phone. Errors are *Problem for a
// malformed (400) or unknown (404) id.
func (s *Service) Detail(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error) {
	typed := id
	id = store.NormalizeID(id)
	switch {
	case id == "":
		return nil, InvalidParams([]schema.FieldError{ParamError("id", "«id» es obligatorio con view=detail")})
	case !store.ValidID(id):
		return nil, InvalidParams([]schema.FieldError{ParamError("id", badIDMessage(typed))})
	}
	rec, err := s.publicRecordByID(ctx, id)
	if err != nil {
		return nil, err
	}
	contact := schema.DetailContact{Name: rec.ContactName}
	if contactShown(rec) {
		contact = schema.DetailContact{Name: rec.ContactName, Available: true, Whatsapp: rec.ContactE164,
			WhatsappURL: "https://wa.me/" + strings.TrimPrefix(rec.ContactE164, "+")}
	}
	d := schema.PublicHelpDetail(publicRecord(s, base, rec, nil, contact))
	counts, err := s.responseCounts(ctx, []*store.Record{rec}, s.now())
	if err != nil {
		return nil, err
	}
	d.Responses = counts[rec.ID]
	return &d, nil
}

// publicRecordByID reads record id (a valid id) as the public sees it now (readAt): unknownRecord for an
// unknown id, goneRecord for a withdrawn or hidden one.
func (s *Service) publicRecordByID(ctx context.Context, id string) (*store.Record, error) {
	rec, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownRecord(id)
	}
	if err != nil {
		return nil, err
	}
	rec = readAt(rec, s.now())
	if !listed(rec.Status) {
		return nil, goneRecord(rec.Status)
	}
	return rec, nil
}

// contactShown says whether rec (as readAt reads it) shows its phone where a phone is shown: not when
// someone reported the number as theirs (moderation.go), nor once expired until renewed (expiry.go). Every
// view's contact.available is this, so a list never promises a phone its detail does not give.
func contactShown(rec *store.Record) bool {
	return !rec.ContactHidden && rec.ContactE164 != "" && rec.Status != store.StatusExpired
}

// panorama answers view=panorama and consultar_panorama: the active emergencies (or the one asked for,
// active or not) with their counts.
func (s *Service) Panorama(ctx context.Context, base, slug string) (*schema.Panorama, error) {
	var ems []Emergency
	for _, e := range s.cfg.Emergencies {
		if (slug == "" && !e.Inactive) || e.Slug == slug {
			ems = append(ems, e)
		}
	}
	if slug != "" && len(ems) == 0 {
		return nil, InvalidParams([]schema.FieldError{s.unknownSlug("emergencySlug", slug)})
	}
	slugs := make([]string, len(ems))
	for i, e := range ems {
		slugs[i] = e.Slug
	}
	aggs, err := s.store.Aggregates(ctx, slugs)
	if err != nil {
		return nil, err
	}
	out := &schema.Panorama{GeneratedAt: s.now().UTC(), Emergencies: make([]schema.EmergencyPanorama, 0, len(ems))}
	for _, e := range ems {
		a := aggs[e.Slug]
		if a.Statuses == nil {
			a.Statuses = map[string]int{}
		}
		ep := schema.EmergencyPanorama{Slug: e.Slug, Title: e.Title, NeededPeople: a.NeededPeople, Counts: []schema.PanoramaCount{}, Statuses: a.Statuses,
			Links: schema.EmergencyLinks(base, e.Slug)}
		if !a.Newest.IsZero() {
			t := a.Newest
			ep.NewestAt = &t
		}
		for k, n := range a.Counts {
			ep.Counts = append(ep.Counts, schema.PanoramaCount{Type: k[0], Category: k[1], Urgency: k[2], Count: n})
			ep.Total += n
			if k[0] == schema.TypeRequest {
				ep.Requests += n
			} else {
				ep.Offers += n
			}
		}
		slices.SortFunc(ep.Counts, cmpCount)
		out.Emergencies = append(out.Emergencies, ep)
	}
	return out, nil
}

// cmpCount orders a panorama's counts by type (requests first), then by the documented order of
// categories and urgencies (offers, which have none, first).
func cmpCount(a, b schema.PanoramaCount) int {
	types := []string{schema.TypeRequest, schema.TypeOffer}
	return cmp.Or(
		cmp.Compare(slices.Index(types, a.Type), slices.Index(types, b.Type)),
		cmp.Compare(slices.Index(schema.Categories, a.Category), slices.Index(schema.Categories, b.Category)),
		cmp.Compare(slices.Index(schema.Urgencies, a.Urgency), slices.Index(schema.Urgencies, b.Urgency)))
}

// municipioGuess names the municipios whose name begins as name does («armeni»: Armenia), those of the
// emergency's area first, or else the places a typo away («pereria»: Pereira), for the refusal of a
// municipio filter that names none: "" when none does.
func (s *Service) municipioGuess(name, slug string) string {
	found, typo := places.MunicipioGuesses(name, s.EmergencyArea(slug)...)
	var guesses []string
	for _, p := range found {
		guesses = append(guesses, fmt.Sprintf("%s (municipio=%s)", places.Label(p), p.MunicipioCode())) // a village's, its municipio's
	}
	switch {
	case len(guesses) == 0:
		return ""
	case typo:
		return "; ¿quiso decir " + schema.JoinOrES(guesses) + "?"
	case len(guesses) == 1:
		return "; empieza así: " + guesses[0]
	}
	return "; empiezan así: " + schema.JoinES(guesses)
}

// centroPobladoHint names the municipios of the centros poblados called name (El Caimo is in Armenia),
// for the refusal of a municipio filter given such a name: "" when none is.
func centroPobladoHint(name string) string {
	var in []string
	for _, p := range places.Search(name, 20) {
		if p.Kind() == places.CentroPoblado && places.Fold(p.Name) == places.Fold(name) {
			if m, ok := places.Lookup(p.MunicipioCode()); ok {
				in = append(in, fmt.Sprintf("en %s (municipio=%s)", places.Label(m), m.Code))
			}
		}
	}
	if len(in) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s es un centro poblado: filtre por su municipio, %s", schema.Quote(name), strings.Join(in, " o "))
}
