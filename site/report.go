package site

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/directaid/directaid/schema"
)

// reportPath is where the «Reportar» form of every record page posts (no JavaScript needed). It is a
// POST target only: its answer is a page for the person who reported, never listed.
const reportPath = "/reportar"

// reportLabels name schema.ReportReasons for a person. not_my_number is worded for someone who has
// just found their own number published, and comes first.
var reportLabels = map[string]struct{ Label, Hint string }{
	"not_my_number":    {"Es mi número y no quiero que se muestre", "Su número deja de mostrarse de inmediato."},
	"spam":             {"Es publicidad o no tiene que ver con la emergencia", ""},
	"fraud":            {"Parece un engaño (por ejemplo, piden dinero)", ""},
	"offensive":        {"Es ofensiva o agresiva", ""},
	"duplicate":        {"Está repetida", ""},
	"already_resolved": {"Ya se resolvió", ""},
	"other":            {"Otro motivo", ""},
}

// reportFieldLabels name the form's fields in the service's messages («reason» → «Motivo»).
var reportFieldLabels = map[string]string{"reason": "Motivo", "note": "Nota"}

// reportOption is one reason of the form.
type reportOption struct {
	Value, Label, Hint string
	Checked            bool
}

// reportView is the «Reportar» form of a record (and, after a POST, its outcome).
type reportView struct {
	ID      string
	Reasons []reportOption
	Note    string
	MaxNote int
	Errors  []string // why the service refused the report, with the fields' labels
	Done    string   // the service's message after a report it recorded
	// RecordURL is the record's page, to go back to; ReportsURL where apps report it.
	RecordURL, ReportsURL string
}

// reportReasons are the form's choices: not_my_number first, then the schema's order.
func reportReasons(checked string) []reportOption {
	reasons := slices.Clone(schema.ReportReasons)
	slices.SortStableFunc(reasons, func(a, b string) int {
		return boolInt(b == "not_my_number") - boolInt(a == "not_my_number")
	})
	out := make([]reportOption, 0, len(reasons))
	for _, r := range reasons {
		l := reportLabels[r]
		out = append(out, reportOption{Value: r, Label: cmp.Or(l.Label, r), Hint: l.Hint, Checked: r == checked})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newReportView(base, id string) *reportView {
	return &reportView{ID: id, Reasons: reportReasons(""), MaxNote: schema.MaxReportNoteRunes, RecordURL: base + schema.RecordPath(id),
		ReportsURL: base + schema.ReportsPath(id)}
}

// serveReport answers the form's POST: it reports through Service.Report, the same service as POST
// help/{id}/reports (its rules, its reporter key), and answers a page: the outcome, the form again with
// the service's messages (400), or the site's 404/410 pages.
func (h *handler) serveReport(w http.ResponseWriter, r *http.Request, v *view) {
	if h.o.Service == nil {
		h.writePage(w, r, v, notFoundPage, http.StatusNotFound, "no-store", false)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.writePage(w, r, v, page{tmpl: "error.md", err: &errorInfo{Status: http.StatusMethodNotAllowed}}, http.StatusMethodNotAllowed, "no-store", false)
		return
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 4096)
	pg := page{tmpl: "reportar.md"}
	if err := r.ParseForm(); err != nil {
		pg.report = &reportView{Reasons: reportReasons(""), MaxNote: schema.MaxReportNoteRunes,
			Errors: []string{"No se pudo leer el formulario. Vuelva a la publicación e inténtelo de nuevo."}}
		h.writePage(w, r, v, pg, http.StatusBadRequest, "no-store", false)
		return
	}
	id, reason, note := strings.TrimSpace(r.PostForm.Get("id")), r.PostForm.Get("reason"), r.PostForm.Get("note")
	rv := newReportView(v.base, id)
	rv.Reasons, rv.Note = reportReasons(reason), note
	pg.report = rv
	if _, known := reportLabels[reason]; !known {
		// No choice made (or one the form does not offer): said in the form's words, not the API's list
		// of reason codes.
		rv.Errors = []string{"Elija por qué la reporta: uno de los motivos de la lista."}
		h.writePage(w, r, v, pg, http.StatusBadRequest, "no-store", false)
		return
	}
	body, err := json.Marshal(schema.ReportInput{Reason: reason, Note: note})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	status, resp := h.o.Service.Report(r, id, body)
	switch status {
	case http.StatusAccepted:
		var res schema.ReportResult
		if err := json.Unmarshal(resp, &res); err != nil {
			h.serverError(w, r, err)
			return
		}
		rv.Done = res.Message
		h.writePage(w, r, v, pg, http.StatusOK, "no-store", false)
	case http.StatusBadRequest:
		if rv.Errors, err = fieldMessages(resp, reportFieldLabels); err != nil {
			h.serverError(w, r, err)
			return
		}
		h.writePage(w, r, v, pg, http.StatusBadRequest, "no-store", false)
	case http.StatusNotFound:
		h.writePage(w, r, v, notFoundPage, status, "no-store", false)
	default:
		if status < 400 {
			h.serverError(w, r, errors.New("site: report answered "+http.StatusText(status)))
			return
		}
		h.writePage(w, r, v, page{tmpl: "error.md", err: &errorInfo{Status: status}}, status, "no-store", false)
	}
}
