package site

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/directaid/directaid/schema"
)

// managePath is the page where a publisher acts on a record with its manage token (schema.ManageURL).
const managePath = "/gestionar"

// manageView is what the manage form sees: the fields as typed (never the token back in a URL) and
// the outcome of the last POST.
type manageView struct {
	ID, Token string
	Buttons   []manageButton
	Done      string // the outcome of an action that succeeded
	Error     string // why an action was refused
	// Confirm asks, without JavaScript, whether to withdraw: the form then holds only that question.
	Confirm bool
	// Record says which publication the codes manage and its status, when the site can read it.
	Record string
	// Responses are the «yo puedo ayudar» of the record, once the publisher asked to see them.
	Responses     []responseItem
	ShowResponses bool
}

// responseItem is one response as the publisher sees it on /gestionar.
type responseItem struct {
	Message, Name, Phone, WhatsappURL, Status, Created string
}

// responseStatusWords say a response's status in Spanish.
var responseStatusWords = map[string]string{
	schema.ResponseActive: "activa", schema.ResponseStatusExpired: "vencida (no se renovó en 48 horas)",
	schema.ResponseWithdrawn: "retirada por quien respondió", schema.ResponseEnded: "terminada (la publicación ya no está abierta)",
}

// responsesAction is the form's button that shows the responses (not an action of the API).
const responsesAction = "responses"

type manageButton struct{ Action, Label string }

var manageButtons = []manageButton{{schema.ActionResolve, "Marcar como resuelta"}, {schema.ActionReopen, "Reabrir"},
	{schema.ActionRenew, "Renovar"}, {schema.ActionWithdraw, "Retirar (borra mi nombre y teléfono)"}}

var actionDone = map[string]string{
	schema.ActionResolve: "Listo: la publicación quedó marcada como resuelta.", schema.ActionReopen: "Listo: la publicación quedó abierta de nuevo.",
	schema.ActionRenew: "Listo: la publicación quedó renovada.", schema.ActionWithdraw: "Listo: la publicación quedó retirada; su nombre y su teléfono se borraron.",
}

// describe says which record mv manages and its status, read as its page reads it.
func (h *handler) describe(r *http.Request, base string, mv *manageView) {
	if h.o.Service == nil || mv.ID == "" {
		return
	}
	d, err := h.o.Service.Detail(r.Context(), base, mv.ID)
	switch {
	case errors.Is(err, ErrGone):
		mv.Record = "Esta publicación ya no está: se retiró."
	case err == nil:
		mv.Record = "«" + d.Title + "» — Estado: " + strings.ToLower(enumLabels[d.Status]) + "."
	}
}

// manage handles the no-JavaScript form: a POST acts through Service.Act, the same service as
// POST help/{id}/actions. The token travels in the POST body only and is never logged.
func (h *handler) manage(r *http.Request) (*manageView, int) {
	mv := &manageView{Buttons: manageButtons}
	if r.Method != http.MethodPost {
		return mv, http.StatusOK
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		mv.Error = "No se pudo leer el formulario. Vuelva a intentarlo."
		return mv, http.StatusBadRequest
	}
	mv.ID, mv.Token = strings.TrimSpace(r.PostForm.Get("id")), strings.TrimSpace(r.PostForm.Get("token"))
	action := r.PostForm.Get("action")
	if mv.ID == "" || mv.Token == "" {
		mv.Error = "Escriba el código de la publicación y el código para gestionar que recibió al publicarla."
		return mv, http.StatusBadRequest
	}
	if action == responsesAction && h.o.Service != nil {
		return h.manageResponses(r, mv)
	}
	base, _ := h.baseURL(r)
	defer h.describe(r, base, mv)
	switch {
	case action == "":
		// «Gestionar» from the confirmation page: the codes, filled in, and the buttons.
		return mv, http.StatusOK
	case action == schema.ActionWithdraw && r.PostForm.Get("confirmar") != "si":
		mv.Confirm = true
		return mv, http.StatusOK
	}
	status, body := h.o.Service.Act(r.Context(), base, mv.ID, mv.Token, action)
	if status == http.StatusOK {
		var res schema.ActionResult
		if json.Unmarshal(body, &res) == nil {
			mv.Done = actionDone[res.Action]
			if !res.Changed {
				mv.Done = "La publicación ya estaba así: no cambió nada."
			}
			mv.Done += " Estado: " + strings.ToLower(enumLabels[res.Status]) + "."
		}
		return mv, status
	}
	var e schema.ErrorBody
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error = "No se pudo aplicar la acción. Vuelva a intentarlo en un momento."
	}
	mv.Error = e.Error
	return mv, status
}

// manageResponses shows the record's responses to its publisher (the form's «Ver respuestas»).
func (h *handler) manageResponses(r *http.Request, mv *manageView) (*manageView, int) {
	status, body := h.o.Service.Responses(r.Context(), mv.ID, mv.Token)
	var list schema.ResponseList
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil {
		var e schema.ErrorBody
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = "No se pudieron leer las respuestas. Vuelva a intentarlo en un momento."
		}
		mv.Error = e.Error
		return mv, cmp.Or(status, http.StatusInternalServerError)
	}
	mv.ShowResponses = true
	for _, it := range list.Items {
		ri := responseItem{Message: it.Message, Name: it.ContactName, Phone: it.ContactWhatsapp, Status: responseStatusWords[it.Status],
			Created: spanishDateTime(it.CreatedAt)}
		if waLink.MatchString(it.WhatsappURL) {
			ri.WhatsappURL = it.WhatsappURL
		}
		mv.Responses = append(mv.Responses, ri)
	}
	switch n := list.Active; n {
	case 0:
		mv.Done = "Nadie ha respondido todavía (o las respuestas ya no están activas)."
	case 1:
		mv.Done = "1 persona dice que está ayudando."
	default:
		mv.Done = fmt.Sprintf("%d personas dicen que están ayudando.", n)
	}
	return mv, http.StatusOK
}
