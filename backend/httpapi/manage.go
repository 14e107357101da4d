package httpapi

import (
	"net/http"
	"strings"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// bearerToken is the token of "Authorization: Bearer <token>", "" when there is none.
func bearerToken(r *http.Request) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, schema.ManageTokenScheme) {
		return ""
	}
	return strings.TrimSpace(tok)
}

// serveRecordAPI serves the paths under HelpPath + "/{id}/": the publisher's actions.
func (h *Handler) serveRecordAPI(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, schema.HelpPath+"/")
	id, sub, ok := strings.Cut(rest, "/")
	if !ok || "/"+sub != schema.ActionsSuffix || id == "" {
		backend.WriteProblem(w, notFound())
		return
	}
	if !allowWithHeaders(w, r, "POST, OPTIONS", "Content-Type, Authorization") {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	token := bearerToken(r)
	// The token is checked before anything else, so that every refusal of a stranger is the same: 401
	// without one, 403 with a wrong one, whether or not the id exists.
	if token == "" {
		backend.WriteProblem(w, backend.Unauthorized())
		return
	}
	if ok, err := h.svc.CheckManageToken(r.Context(), id, token); err != nil || !ok || token == "" {
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
		} else {
			backend.WriteProblem(w, backend.Forbidden())
		}
		return
	}
	if _, p := postParams(r); p != nil {
		backend.WriteProblem(w, p)
		return
	}
	body, p := readJSONBody(w, r)
	if p != nil {
		backend.WriteProblem(w, p)
		return
	}
	var req schema.ActionRequest
	if p := backend.DecodeBody(body, backend.CheckAction, &req); p != nil {
		backend.WriteProblem(w, p)
		return
	}
	res, err := h.svc.Act(r.Context(), h.svc.BaseURL(r), id, token, strings.TrimSpace(req.Action))
	if err != nil {
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	backend.WriteJSON(w, http.StatusOK, res)
}
