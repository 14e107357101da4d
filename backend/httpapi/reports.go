package httpapi

import (
	"net/http"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// readReport reads the body of a report (a record's or a response's): no query parameter, a JSON body,
// a valid schema.ReportInput.
func readReport(w http.ResponseWriter, r *http.Request) (*schema.ReportInput, *backend.Problem) {
	body, p := postBody(w, r)
	if p != nil {
		return nil, p
	}
	return backend.DecodeReport(body)
}

// serveReports answers POST /api/public/v1/help/{id}/reports.
func (h *Handler) serveReports(w http.ResponseWriter, r *http.Request, id string) {
	if !allow(w, r, "POST, OPTIONS") {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	in, p := readReport(w, r)
	if p != nil {
		backend.WriteProblem(w, p)
		return
	}
	res, err := h.svc.Report(r.Context(), id, in, backend.ClientIP(r))
	if err != nil {
		backend.WriteProblem(w, backend.WithPathFields(backend.AsProblem(err)))
		return
	}
	backend.WriteJSON(w, http.StatusAccepted, res)
}
