package site

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/directaid/directaid/schema"
)

// The «Yo puedo ayudar» of the record pages, without JavaScript: the form of an open record posts to
// schema.RespondFormPath, which responds through Service.Respond (the rules, the rate limit and the
// share of the public count of POST help/{id}/responses) and answers a page with the service's message
// and two buttons, «Renovar» and «Retirar», that post the response token to schema.ResponseFormPath.
// The token is on that page only: it is no-store, and the response ends by itself after 48 hours.

// respondFieldLabels name the form's fields in the service's messages («message» → «Mensaje»), and
// respondInputs are their inputs' ids.
var (
	respondFieldLabels = map[string]string{"message": "Qué puede hacer y cuándo", "contactName": "Su nombre", "contactWhatsapp": "Su WhatsApp"}
	respondInputs      = map[string]string{"message": "responder-mensaje", "contactName": "responder-nombre", "contactWhatsapp": "responder-whatsapp"}
)

// formMsg is one message of a form's summary: For is the id of the input it is about ("" for none).
type formMsg struct{ Text, For string }

// respondView is the «Yo puedo ayudar» form of an open record (and, after its POST, the outcome).
type respondView struct {
	ID    string
	Offer bool // the record is an offer: «Me interesa» rather than «Puedo ayudar»
	// Heading and Intro open the form's section of the record page.
	Heading, Intro, Button                string
	Message, ContactName, ContactWhatsapp string
	MaxMessage                            int
	Errors                                []formMsg         // why the service refused it, with the fields' labels
	Invalid                               map[string]string // by field name: its message, shown under its input
	Closed                                bool              // refused as a whole (Errors[0] says why): no form again
	// After a response was stored, or an action on it: the service's message, and what the buttons post.
	Done              string
	ResponseID, Token string
	Active            bool // the buttons «Renovar» and «Retirar» are offered
	Withdrawn         bool
	// RecordURL is the record's page, to go back to; ResponsesURL where apps respond.
	RecordURL, ResponsesURL string
}

func newRespondView(base, id string, offer bool) *respondView {
	rv := &respondView{ID: id, Offer: offer, MaxMessage: schema.MaxResponseMessageRunes, RecordURL: base + schema.RecordPath(id),
		ResponsesURL: base + schema.ResponsesPath(id),
		Heading:      "¿Puede ayudar?", Button: "Avisar que puedo ayudar",
		Intro: "Avise a quien pidió ayuda que usted puede ayudar. Solo esa persona verá su mensaje y, si los deja, su nombre y su WhatsApp; " +
			"en esta página se ve únicamente cuántas personas están ayudando, para que otras vayan primero a quien nadie ha respondido."}
	if offer {
		rv.Heading, rv.Button = "¿Le sirve esta ayuda?", "Avisar que me interesa"
		rv.Intro = "Avise a quien ofrece esta ayuda que le interesa. Solo esa persona verá su mensaje y, si los deja, su nombre y su WhatsApp."
	}
	return rv
}

// respondViewOf is the form as the POST f sent it.
func respondViewOf(base string, f url.Values) *respondView {
	rv := newRespondView(base, strings.TrimSpace(f.Get("id")), f.Get("tipo") == schema.TypeOffer)
	rv.Message, rv.ContactName, rv.ContactWhatsapp = f.Get("message"), f.Get("contactName"), f.Get("contactWhatsapp")
	return rv
}

// serveRespond answers the form's POST: a response through Service.Respond, and a page with its outcome,
// the form again with the service's messages (400), or the site's 404/410 pages.
func (h *handler) serveRespond(w http.ResponseWriter, r *http.Request, v *view) {
	f, ok := h.respondForm(w, r, v)
	if !ok {
		return
	}
	rv := respondViewOf(v.base, f)
	id := rv.ID
	pg := page{tmpl: "responder.md", respond: rv}
	body, err := json.Marshal(schema.ResponseInput{Message: rv.Message, ContactName: rv.ContactName, ContactWhatsapp: rv.ContactWhatsapp})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	status, resp := h.o.Service.Respond(r, id, body)
	switch status {
	case http.StatusCreated, http.StatusOK: // OK: the form sent twice, the stored response
		var res schema.ResponseCreated
		if err := json.Unmarshal(resp, &res); err != nil {
			h.serverError(w, r, err)
			return
		}
		rv.ID, rv.RecordURL = res.ID, v.base+schema.RecordPath(res.ID)
		rv.Done, rv.ResponseID, rv.Token, rv.Active = respondedWords(rv, res.Counted), res.ResponseID, res.ResponseToken, true
		h.writePage(w, r, v, pg, http.StatusOK, "no-store", false)
	case http.StatusBadRequest:
		var e schema.ErrorBody
		if err := json.Unmarshal(resp, &e); err != nil {
			h.serverError(w, r, err)
			return
		}
		rv.fieldErrors(&e)
		h.writePage(w, r, v, pg, http.StatusBadRequest, "no-store", false)
	default:
		h.respondFailure(w, r, v, pg, status, resp)
	}
}

// serveResponseAction answers the buttons of the outcome page: renew or withdraw the response with its
// token, through Service.ActOnResponse, and the same page with what was done.
func (h *handler) serveResponseAction(w http.ResponseWriter, r *http.Request, v *view) {
	f, ok := h.respondForm(w, r, v)
	if !ok {
		return
	}
	id, rid, token, action := strings.TrimSpace(f.Get("id")), strings.TrimSpace(f.Get("response")), f.Get("token"), f.Get("action")
	rv := newRespondView(v.base, id, false)
	rv.ResponseID, rv.Token = rid, token
	pg := page{tmpl: "responder.md", respond: rv}
	status, resp := h.o.Service.ActOnResponse(r, id, rid, token, action)
	if status != http.StatusOK {
		h.respondFailure(w, r, v, pg, status, resp)
		return
	}
	var res schema.ResponseActionResult
	if err := json.Unmarshal(resp, &res); err != nil {
		h.serverError(w, r, err)
		return
	}
	switch {
	case res.Action == schema.ResponseActionWithdraw:
		rv.Done, rv.Withdrawn = "Listo: retiró su respuesta. Su mensaje, su nombre y su número se borraron.", true
	case res.Counted:
		rv.Done = "Listo: su respuesta cuenta otras 48 horas."
	default:
		rv.Done = "Listo: su respuesta sigue activa otras 48 horas, pero no se suma al número público de personas que ayudan: " +
			"desde su conexión ya se sumaron muchas respuestas en las últimas 48 horas."
	}
	rv.Active = res.Status == schema.ResponseActive
	h.writePage(w, r, v, pg, http.StatusOK, "no-store", false)
}

// respondForm reads the POST of the respond forms: 404 without a service, 405 for another method, the
// page's error for a form it cannot read.
func (h *handler) respondForm(w http.ResponseWriter, r *http.Request, v *view) (f url.Values, ok bool) {
	if h.o.Service == nil {
		h.writePage(w, r, v, notFoundPage, http.StatusNotFound, "no-store", false)
		return nil, false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.writePage(w, r, v, page{tmpl: "error.md", err: &errorInfo{Status: http.StatusMethodNotAllowed}}, http.StatusMethodNotAllowed, "no-store", false)
		return nil, false
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 8192)
	if err := r.ParseForm(); err != nil {
		rv := newRespondView(v.base, "", false)
		rv.Errors = []formMsg{{Text: "No se pudo leer el formulario. Vuelva a la publicación e inténtelo de nuevo."}}
		h.writePage(w, r, v, page{tmpl: "responder.md", respond: rv}, http.StatusBadRequest, "no-store", false)
		return nil, false
	}
	return r.PostForm, true
}

// respondFailure answers a respond form's POST that the service refused other than for its fields: the
// site's 404 page; the page of pg with the service's message and no form for a record that takes no
// response (410), a wrong code (403) or an action that does not apply (409); the error page otherwise.
func (h *handler) respondFailure(w http.ResponseWriter, r *http.Request, v *view, pg page, status int, resp []byte) {
	var e schema.ErrorBody
	switch {
	case status == http.StatusNotFound:
		h.writePage(w, r, v, notFoundPage, status, "no-store", false)
	case (status == http.StatusGone || status == http.StatusForbidden || status == http.StatusConflict) && json.Unmarshal(resp, &e) == nil && e.Error != "":
		if e.Code == schema.CodeTooManyResponses { // the API's words name its parameter
			e.Error = "Esta publicación ya recibió muchas respuestas: quien la publicó ya tiene a quién escribir. " +
				"En la lista de su emergencia, «Sin nadie ayudando» muestra las que nadie ha respondido todavía."
			if msg := strings.TrimSpace(pg.respond.Message); msg != "" { // to send it to another one
				e.Error += " Lo que usted escribió: «" + msg + "»."
			}
		}
		pg.respond.Errors, pg.respond.Closed = []formMsg{{Text: e.Error}}, true
		h.writePage(w, r, v, pg, status, "no-store", false)
	case status == http.StatusTooManyRequests && json.Unmarshal(resp, &e) == nil && e.Error != "":
		// The service's own 429 (the rate limiter answers before the site): this network's responses to
		// this record are spent for 48 hours, which its words say; a minute's wait would not do.
		pg.respond.Errors, pg.respond.Closed = []formMsg{{Text: e.Error}}, true
		h.writePage(w, r, v, pg, status, "no-store", false)
	case status < 400:
		h.serverError(w, r, errors.New("site: a response's service answered "+http.StatusText(status)))
	case status == http.StatusServiceUnavailable && pg.respond.ResponseID == "":
		// The database cannot answer for now: the form as it was written, to send again in a moment.
		pg.respond.Errors = []formMsg{{Text: "El servicio no pudo guardar su respuesta en este momento. Lo que escribió sigue aquí: " +
			"vuelva a pulsar el botón en unos segundos y no se enviará dos veces."}}
		h.writePage(w, r, v, pg, status, "no-store", false)
	default:
		h.writePage(w, r, v, page{tmpl: "error.md", err: &errorInfo{Status: status}}, status, "no-store", false)
	}
}

// fieldErrors puts a 400's details on the form: each under its input and in the summary, linked to it.
func (rv *respondView) fieldErrors(e *schema.ErrorBody) {
	labels := respondFieldLabels
	if rv.Offer { // the message's label on an offer's form
		labels = maps.Clone(labels)
		labels["message"] = "Qué necesita y cuándo"
	}
	msgs := labelled(e, labels) // one per detail, in order
	rv.Invalid = map[string]string{}
	for i, d := range e.Details {
		name := strings.TrimPrefix(d.Field, "/")
		id := respondInputs[name] // "" for a detail of no input
		rv.Errors = append(rv.Errors, formMsg{Text: msgs[i], For: id})
		if id != "" && rv.Invalid[name] == "" {
			rv.Invalid[name] = msgs[i]
		}
	}
	if len(rv.Errors) == 0 {
		rv.Errors = []formMsg{{Text: e.Error}}
	}
}

// FieldError is the message of the field name, for the template ("" when it has none).
func (rv *respondView) FieldError(name string) string { return rv.Invalid[name] }

// fieldMessages are the messages of a 400's details, each field named by its label on the form.
func fieldMessages(resp []byte, labels map[string]string) ([]string, error) {
	var e schema.ErrorBody
	if err := json.Unmarshal(resp, &e); err != nil {
		return nil, err
	}
	if out := labelled(&e, labels); len(out) > 0 {
		return out, nil
	}
	return []string{e.Error}, nil
}

// labelled are the messages of e's details, in order, each field named by its label.
func labelled(e *schema.ErrorBody, labels map[string]string) []string {
	var out []string
	for _, d := range e.Details {
		m := d.Message
		for name, label := range labels {
			m = strings.ReplaceAll(m, "«"+name+"»", "«"+label+"»")
		}
		out = append(out, upperFirst(m)+".")
	}
	return out
}

// respondedWords say what a stored response does, in the site's words (the API's message speaks of the
// responseToken, which the page's buttons carry).
func respondedWords(rv *respondView, counted bool) string {
	who, what := "quien pidió ayuda", "su mensaje"
	if rv.Offer {
		who = "quien ofrece la ayuda"
	}
	if strings.TrimSpace(rv.ContactWhatsapp) != "" {
		what = "su mensaje y su WhatsApp"
	}
	// Nobody is notified: the publisher sees responses when they open their manage link. The responder
	// must not wait for a message that may come late.
	msg := "Gracias: " + who + " verá " + what + " cuando abra el enlace que recibió al publicar, y puede tardar en abrirlo: " +
		"si esta página muestra su WhatsApp, escríbale también."
	if !counted {
		return msg + " Esta respuesta no se suma al número de personas que ayudan que muestra la página: su número, o su conexión, ya sumaron antes."
	}
	if rv.Offer {
		return msg + " La página suma una persona más interesada durante 48 horas."
	}
	return msg + " La página suma una persona más que está ayudando durante 48 horas, para que otras vayan primero a quien nadie ha respondido."
}
