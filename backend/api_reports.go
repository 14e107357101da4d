package backend

import (
	"context"
	"net"
	"net/http"

	"github.com/directaid/directaid/schema"
)

type clientIPKey struct{}

// WithClientIP records the client's address as the server resolved it (Caddy's {client_ip}, which
// honours trusted_proxies): the key of the rate limits and what tells reporters apart.
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, clientIPKey{}, ip)
}

// ClientIP is the address WithClientIP recorded, or the connection's peer.
func ClientIP(r *http.Request) string {
	if ip, ok := r.Context().Value(clientIPKey{}).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// readReport reads the body of a report (a record's or a response's): no query parameter, a JSON body,
// a valid schema.ReportInput.
func readReport(w http.ResponseWriter, r *http.Request) (*schema.ReportInput, *Problem) {
	body, p := postBody(w, r)
	if p != nil {
		return nil, p
	}
	return decodeReport(body)
}

// serveReports answers POST /api/public/v1/help/{id}/reports.
func (h *Handler) serveReports(w http.ResponseWriter, r *http.Request, id string) {
	if !allow(w, r, "POST, OPTIONS") {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	in, p := readReport(w, r)
	if p != nil {
		writeProblem(w, p)
		return
	}
	res, err := h.svc.Report(r.Context(), id, in, ClientIP(r))
	if err != nil {
		writeProblem(w, withPathFields(AsProblem(err)))
		return
	}
	WriteJSON(w, http.StatusAccepted, res)
}
