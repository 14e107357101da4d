package httpapi

import (
	"net/http"
	"strings"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// serveResponses serves HelpPath + "/{id}/responses" and what is below it.
func (h *Handler) serveResponses(w http.ResponseWriter, r *http.Request, id, rest string) {
	w.Header().Set("Cache-Control", "no-store")
	if rest == "" {
		h.serveResponseCollection(w, r, id)
		return
	}
	rid, sub, ok := strings.Cut(rest, "/")
	rid = strings.ToLower(rid) // hexadecimal, whatever its case
	if !ok || rid == "" {
		backend.WriteProblem(w, notFound())
		return
	}
	switch "/" + sub {
	case schema.ActionsSuffix:
		h.serveResponseAction(w, r, id, rid)
	case schema.ReportsSuffix:
		if !allow(w, r, "POST, OPTIONS") {
			return
		}
		if !backend.ValidResponseID(rid) {
			backend.WriteProblem(w, backend.WithPathFields(backend.InvalidParams([]schema.FieldError{backend.ParamError("responseId", "«responseId» no tiene la forma de un id de respuesta (16 caracteres hexadecimales)")})))
			return
		}
		in, p := readReport(w, r)
		if p != nil {
			backend.WriteProblem(w, p)
			return
		}
		res, err := h.svc.ReportResponse(r.Context(), id, rid, in, backend.ClientIP(r))
		if err != nil {
			backend.WriteProblem(w, backend.WithPathFields(backend.AsProblem(err)))
			return
		}
		backend.WriteJSON(w, http.StatusAccepted, res)
	default:
		backend.WriteProblem(w, notFound())
	}
}

// postBody refuses every query parameter, then reads the JSON body.
func postBody(w http.ResponseWriter, r *http.Request) ([]byte, *backend.Problem) {
	if _, p := postParams(r); p != nil {
		return nil, p
	}
	return readJSONBody(w, r)
}

// serveResponseCollection: POST a response (anyone), GET the responses (the publisher, with the manage token).
func (h *Handler) serveResponseCollection(w http.ResponseWriter, r *http.Request, id string) {
	if !allowWithHeaders(w, r, "GET, POST, OPTIONS", "Content-Type, Authorization") {
		return
	}
	if r.Method == http.MethodPost {
		body, p := postBody(w, r)
		if p != nil {
			backend.WriteProblem(w, p)
			return
		}
		in, e164, p := backend.DecodeResponse(body)
		if p != nil {
			backend.WriteProblem(w, p)
			return
		}
		res, err := h.svc.Respond(r.Context(), id, in, e164, backend.ClientIP(r))
		if err != nil {
			backend.WriteProblem(w, backend.WithPathFields(backend.AsProblem(err)))
			return
		}
		// No Location: a response has no URL of its own to read (its author acts on it with the token, its
		// record's publisher reads it in the record's list).
		status := http.StatusCreated
		if res.Duplicate { // a retry: the stored response
			status = http.StatusOK
		}
		backend.WriteJSON(w, status, res)
		return
	}
	// GET: the manage token first, as on …/actions: 401 without one, the same 403 for a wrong one and an
	// unknown id.
	token := bearerToken(r)
	if token == "" {
		backend.WriteProblem(w, backend.Unauthorized())
		return
	}
	if ok, err := h.svc.CheckManageToken(r.Context(), id, token); err != nil || !ok {
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
		} else {
			backend.WriteProblem(w, backend.Forbidden())
		}
		return
	}
	if errs := checkParams(apiQuery(r), "", nil); len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	res, err := h.svc.Responses(r.Context(), id)
	if err != nil {
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	backend.WriteJSON(w, http.StatusOK, res)
}

// serveResponseAction: the author's renew or withdraw, with the responseToken.
func (h *Handler) serveResponseAction(w http.ResponseWriter, r *http.Request, id, rid string) {
	if !allowWithHeaders(w, r, "POST, OPTIONS", "Content-Type, Authorization") {
		return
	}
	token := bearerToken(r)
	if token == "" {
		backend.WriteProblem(w, backend.UnauthorizedResponse())
		return
	}
	if ok, err := h.svc.CheckResponseToken(r.Context(), id, rid, token); err != nil || !ok {
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
		} else {
			backend.WriteProblem(w, backend.ForbiddenResponse())
		}
		return
	}
	body, p := postBody(w, r)
	if p != nil {
		backend.WriteProblem(w, p)
		return
	}
	var req schema.ResponseActionRequest
	if p := backend.DecodeBody(body, backend.CheckResponseAction, &req); p != nil {
		backend.WriteProblem(w, p)
		return
	}
	res, err := h.svc.ActOnResponse(r.Context(), id, rid, strings.TrimSpace(req.Action), backend.ClientIP(r))
	if err != nil {
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	backend.WriteJSON(w, http.StatusOK, res)
}
