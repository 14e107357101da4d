package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site"
)

type baseURLKey struct{}

// clientKey holds the address of the request's client (backend.ClientIP) in the site's context.
type clientKey struct{}

// newSite builds the website over svc. Its no-JavaScript form fallback publishes through the same
// service as POST help, so the rules, the errors and the idempotency are the same; its record pages and
// lists read through the same service as GET help?view=detail|list, with the same parameters.
func newSite(svc *backend.Service, tools []schema.MCPTool, tiles site.MapTiles) (http.Handler, error) {
	return site.New(site.Options{
		Emergencies:     func() []schema.EmergencyInfo { return svc.ActiveEmergencies("") },
		PublicURL:       svc.Config().PublicURL,
		Contact:         svc.Config().OperatorContact,
		MapTiles:        tiles,
		Tools:           tools,
		RateLimitEvents: svc.Config().RateLimits[backend.ZonePublish].Events,
		RateLimitWindow: svc.Config().RateLimits[backend.ZonePublish].Window,
		LimitPages:      limitPages,
		Service:         siteService{svc},
		Moderation:      siteModeration(svc),
		OnError:         func(r *http.Request, status int, err error) { svc.Observe().SiteError(r.URL.Path, status, err) },
	})
}

// siteError is a read's error as the site takes it: a refusal for now (503: the database cannot answer)
// becomes a site.UnavailableError with the API's Retry-After.
func siteError(err error) error {
	if p := backend.AsProblem(err); err != nil && p.Status == http.StatusServiceUnavailable {
		return &site.UnavailableError{RetryAfter: p.RetryAfter, Err: err}
	}
	return err
}

// siteService is the site.Service of svc: each method answers as the API endpoint the site names.
type siteService struct{ svc *backend.Service }

func (s siteService) ParseList(v url.Values) (schema.ListQuery, []schema.FieldError) {
	return parseListQuery(v)
}

func (s siteService) List(ctx context.Context, base string, q schema.ListQuery) (*schema.HelpList, error) {
	l, err := s.svc.List(ctx, base, q)
	if p := (*backend.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusBadRequest {
		return nil, &site.QueryError{Details: p.Body.Details}
	}
	return l, siteError(err)
}

func (s siteService) Detail(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error) {
	d, err := s.svc.Detail(ctx, base, id)
	// A malformed id (400) has no page either.
	p := (*backend.Problem)(nil)
	switch {
	case errors.As(err, &p) && (p.Status == http.StatusNotFound || p.Status == http.StatusBadRequest):
		return nil, site.ErrNotFound
	case errors.As(err, &p) && p.Status == http.StatusGone && p.Body.RecordStatus == schema.StatusHidden:
		return nil, site.ErrHidden
	case errors.As(err, &p) && p.Status == http.StatusGone:
		return nil, site.ErrGone
	}
	return d, siteError(err)
}

func (s siteService) Matches(ctx context.Context, base, id string, limit int) (*schema.HelpMatches, error) {
	m, err := s.svc.Matches(ctx, base, id, schema.MatchesQuery{Limit: limit})
	return m, siteError(err)
}

func (s siteService) Act(ctx context.Context, base, id, token, action string) (int, []byte) {
	res, err := s.svc.Act(ctx, base, id, token, action)
	return siteAnswer(http.StatusOK, res, err)
}

func (s siteService) Responses(ctx context.Context, id, token string) (int, []byte) {
	res, err := s.svc.ResponsesFor(ctx, id, token)
	return siteAnswer(http.StatusOK, res, err)
}

// Report takes the form's body through the API's decoder and Service.report: the same rules and messages.
func (s siteService) Report(r *http.Request, id string, body []byte) (int, []byte) {
	in, p := backend.DecodeReport(body)
	if p != nil {
		return siteAnswer(0, nil, p)
	}
	res, err := s.svc.Report(r.Context(), id, in, backend.ClientIP(r))
	if p := (*backend.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusBadRequest {
		err = notFound() // the body passed backend.DecodeReport: only the id was refused, and a malformed id has no page
	}
	return siteAnswer(http.StatusAccepted, res, err)
}

// Respond takes the form's body through the API's decoder and Service.Respond: the same rules, messages
// and share of the public count as POST help/{id}/responses.
func (s siteService) Respond(r *http.Request, id string, body []byte) (int, []byte) {
	in, e164, p := backend.DecodeResponse(body)
	if p != nil {
		return siteAnswer(0, nil, p)
	}
	res, err := s.svc.Respond(r.Context(), id, in, e164, backend.ClientIP(r))
	if p := (*backend.Problem)(nil); errors.As(err, &p) && p.Status == http.StatusBadRequest {
		err = notFound() // the body passed DecodeResponse: only the id was refused, and a malformed id has no page
	}
	status := http.StatusCreated
	if res != nil && res.Duplicate {
		status = http.StatusOK
	}
	return siteAnswer(status, res, err)
}

// ActOnResponse checks the response token as POST …/responses/{rid}/actions does (the same 403 for a
// wrong code and an unknown response), then applies action through Service.ActOnResponse.
func (s siteService) ActOnResponse(r *http.Request, id, rid, token, action string) (int, []byte) {
	res, err := s.svc.ActOnResponseWith(r.Context(), id, rid, token, action, backend.ClientIP(r))
	return siteAnswer(http.StatusOK, res, err)
}

func (s siteService) Publish(ctx context.Context, body []byte) (int, []byte) {
	svc := s.svc
	start := time.Now()
	base, _ := ctx.Value(baseURLKey{}).(string)
	client, _ := ctx.Value(clientKey{}).(string)
	res, created, err := svc.Publish(ctx, base, body, "", client)
	var v any = res
	status := http.StatusOK
	switch {
	case err != nil:
		p := backend.AsProblem(err)
		status, v = p.Status, &p.Body
		svc.Config().Observe.Published(backend.ChannelForm, start, nil, false, p)
	case created:
		status = http.StatusCreated
	}
	if err == nil {
		svc.Config().Observe.Published(backend.ChannelForm, start, res, created, nil)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return http.StatusInternalServerError, backend.InternalErrorJSON()
	}
	return status, b
}

// siteAnswer is a service's answer as its endpoint sends it: status and res, or err's problem.
func siteAnswer(status int, res any, err error) (int, []byte) {
	if err != nil {
		p := backend.AsProblem(err)
		status, res = p.Status, &p.Body
	}
	b, err := json.Marshal(res)
	if err != nil {
		return http.StatusInternalServerError, backend.InternalErrorJSON()
	}
	return status, b
}

// serveSite hands r to the site with the request's base URL, which publicUrl links need.
func (h *Handler) serveSite(w http.ResponseWriter, r *http.Request) {
	h.site.ServeHTTP(w, h.withBase(r))
}

// withBase gives r's context the request's base URL and its client's address (the site's Publish reads
// both).
func (h *Handler) withBase(r *http.Request) *http.Request {
	ctx := context.WithValue(r.Context(), baseURLKey{}, h.svc.BaseURL(r))
	return r.WithContext(context.WithValue(ctx, clientKey{}, backend.ClientIP(r)))
}

// siteModeration is what the site's /moderacion needs: the queue, Moderate and RestoreByReporter, for
// the moderator that the server authenticated (WithModerator), who the audit trail then names.
func siteModeration(s *backend.Service) *site.Moderation {
	var mu sync.Mutex
	var key []byte
	notFound := func(err error) error {
		switch {
		case errors.Is(err, store.ErrNotFound):
			return site.ErrNotFound
		case errors.Is(err, backend.ErrErased):
			return site.ErrErased
		}
		return err
	}
	return &site.Moderation{
		Moderator: func(r *http.Request) string { return backend.Moderator(r.Context()) },
		Queue: func(ctx context.Context) ([]site.ModerationItem, error) {
			q, err := s.ModerationQueue(ctx)
			if err != nil {
				return nil, err
			}
			items := make([]site.ModerationItem, 0, len(q))
			for _, it := range q {
				r := it.Record
				mi := site.ModerationItem{ID: r.ID, Type: r.Type, EmergencySlug: r.EmergencySlug, Status: r.Status, Title: r.Title,
					Description: r.Description, Category: r.Category, Urgency: r.Urgency, Address: r.Address, Neighborhood: r.Neighborhood,
					PlaceCode: r.PlaceCode, MunicipioCode: r.MunicipioCode, ContactName: r.ContactName, Phone: cmp.Or(r.ContactE164, r.ContactWhatsapp),
					ContactHidden: r.ContactHidden, CreatedAt: r.CreatedAt}
				for _, rp := range it.Reports {
					mi.Reports = append(mi.Reports, site.ModerationReport{Reason: rp.Reason, Note: rp.Note, Reporter: rp.Reporter, At: rp.At, Reviewed: rp.Reviewed})
				}
				for _, hr := range it.HiddenResponses {
					mi.HiddenResponses = append(mi.HiddenResponses, site.ModerationResponse{ID: hr.ID, Message: hr.Message, ContactName: hr.ContactName,
						Phone: cmp.Or(hr.ContactE164, hr.ContactWhatsapp), CreatedAt: hr.CreatedAt, Reporters: hr.Reporters})
				}
				items = append(items, mi)
			}
			return items, nil
		},
		Act: func(ctx context.Context, id, action, status string) error {
			id = store.NormalizeID(id)
			if !store.ValidID(id) {
				return site.ErrNotFound
			}
			_, err := s.Moderate(ctx, id, action, status)
			return notFound(err)
		},
		RestoreReporter: func(ctx context.Context, reporter string) (records, responses int, err error) {
			ids, err := s.RestoreByReporter(ctx, reporter)
			for _, id := range ids {
				if strings.Contains(id, schema.ResponsesSuffix+"/") {
					responses++
				} else {
					records++
				}
			}
			return records, responses, notFound(err)
		},
		RestoreResponse: func(ctx context.Context, id, rid string) error {
			return notFound(s.RestoreResponse(ctx, id, rid)) // a malformed id is no stored one: ErrNotFound
		},
		Key: func(ctx context.Context) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			if key == nil {
				k, err := s.ModerationFormKey(ctx)
				if err != nil {
					return nil, err
				}
				key = k
			}
			return key, nil
		},
	}
}
