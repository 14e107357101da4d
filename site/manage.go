package site

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
	// Gone is a record whose detail reads as gone (withdrawn, or hidden: Detail does not tell them apart):
	// the form then shows no buttons and no responses.
	Gone bool
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

// manageButton is one action of the form; Class styles it (withdrawing, which erases, is «peligro»).
// Hidden when the record's status does not take it: it is on the page all the same, for the script to
// show once the status changes («Reabrir» after «Marcar como resuelta»).
type manageButton struct {
	Action, Label, Class string
	Hidden               bool
}

var manageButtons = []manageButton{{Action: schema.ActionResolve, Label: "Marcar como resuelta"}, {Action: schema.ActionReopen, Label: "Reabrir"},
	{Action: schema.ActionRenew, Label: "Renovar"}, {Action: schema.ActionWithdraw, Label: "Retirar (borra mi nombre y teléfono)", Class: "peligro"}}

// statusActions are the actions that change a record in each status (the service refuses the others, or
// changes nothing): the form shows only those buttons, with JavaScript (data-acciones) and without.
var statusActions = map[string][]string{
	schema.StatusOpen:     {schema.ActionResolve, schema.ActionRenew, schema.ActionWithdraw},
	schema.StatusResolved: {schema.ActionReopen, schema.ActionWithdraw},
	schema.StatusExpired:  {schema.ActionResolve, schema.ActionReopen, schema.ActionRenew, schema.ActionWithdraw},
	schema.StatusHidden:   {schema.ActionWithdraw},
}

// buttonsFor are the form's buttons for a record in status (all of them for a status it does not know).
func buttonsFor(status string) []manageButton {
	allowed, ok := statusActions[status]
	if !ok {
		return manageButtons
	}
	out := slices.Clone(manageButtons)
	for i := range out {
		out[i].Hidden = !slices.Contains(allowed, out[i].Action)
	}
	return out
}

// StatusActions is statusActions as JSON, for the form's data-acciones.
func (mv *manageView) StatusActions() string {
	b, _ := json.Marshal(statusActions)
	return string(b)
}

var actionDone = map[string]string{
	schema.ActionResolve: "Listo: la publicación quedó marcada como resuelta.", schema.ActionReopen: "Listo: la publicación quedó abierta de nuevo.",
	schema.ActionRenew: "Listo: la publicación quedó renovada.", schema.ActionWithdraw: "Listo: la publicación quedó retirada; su nombre y su teléfono se borraron.",
}

// phoneReportedWords tell a publisher why the page of its open record shows no number.
const phoneReportedWords = "Su número no se muestra: alguien informó que no es suyo. Si es suyo, pida a quien opera el sitio " +
	"que revise el reporte: así vuelve a mostrarse, aquí y en sus próximas " +
	"publicaciones. Retirar esta publicación y publicarla de nuevo no lo muestra."

// resolvedWords tell a publisher that a resolved record still shows its phone on its page, and how to
// remove it: resolving takes it out of the lists only.
const resolvedWords = "Su número sigue en la página de la publicación, para quien la abra; si quiere quitarlo, use «Retirar»."

// expiredWords tell a publisher what an expired record is, and what each action does to it.
const expiredWords = "Venció sin que nadie la renovara: ya no está en las listas y su número no se muestra. «Renovar» o «Reabrir» " +
	"la publican de nuevo, con su número, por otro plazo; «Marcar como resuelta» la cierra."

// ExpiredWords are expiredWords, for the page's script.
func (manageView) ExpiredWords() string { return expiredWords }

// ResolvedWords are resolvedWords, for the page's script.
func (manageView) ResolvedWords() string { return resolvedWords }

// hiddenWords tell a publisher why their record shows to nobody, and that its data are still kept.
const hiddenWords = "Esta publicación está oculta mientras quien opera el sitio revisa reportes de la comunidad: " +
	"no se muestra a nadie, pero su nombre y su teléfono siguen guardados. Puede retirarla para borrarlos."

// HiddenWords are hiddenWords, for the page's script.
func (manageView) HiddenWords() string { return hiddenWords }

// NoSuchRecord is noSuchRecord, for the page's script.
func (manageView) NoSuchRecord() string { return noSuchRecord }

// missingCodesWords ask for the two codes (or the link) when a form is sent without them.
const missingCodesWords = "Escriba el código de la publicación y el código para gestionar que recibió al publicarla (o pegue el enlace entero)."

// MissingCodesWords are missingCodesWords, for the page's script.
func (manageView) MissingCodesWords() string { return missingCodesWords }

// PhoneReportedWords are phoneReportedWords, for the page's script.
func (manageView) PhoneReportedWords() string { return phoneReportedWords }

// ExpiryWords is expiryWords, and Months the months' names, for the page's script.
func (manageView) ExpiryWords() string { return expiryWords }
func (manageView) Months() string      { return monthNames() }

// expiryWords say when an open publication stops showing ({fecha}: spanishDateTime of its expiresAt),
// after an action that gives it a lifetime.
const expiryWords = "Si nadie la renueva, deja de mostrarse el {fecha}."

// noSuchRecord is what /gestionar says of a publication code that names no publication (gestionar.js
// reads it from the form's data-no-hay).
const noSuchRecord = "No hay ninguna publicación con ese código: revíselo (son 16 letras y números)."

// describe says which record mv manages and its status, read as its page reads it.
func (h *handler) describe(r *http.Request, base string, mv *manageView) {
	if h.o.Service == nil || mv.ID == "" {
		return
	}
	d, err := h.o.Service.Detail(r.Context(), base, mv.ID)
	switch {
	case errors.Is(err, ErrHidden):
		mv.Record = hiddenWords
		mv.Buttons = buttonsFor(schema.StatusHidden)
	case errors.Is(err, ErrGone):
		mv.Record = "Esta publicación ya no está: se retiró."
		mv.Gone, mv.Buttons, mv.Confirm = true, nil, false
	case errors.Is(err, ErrNotFound):
		// A mistyped code: no record to act on, so no buttons (they offered «Reabrir» on nothing).
		mv.Record = noSuchRecord
		mv.Buttons, mv.Confirm = nil, false
	case err == nil:
		mv.Record = "«" + d.Title + "» — Estado: " + strings.ToLower(enumLabels[d.Status]) + "."
		if d.ExpiresAt != nil && !strings.Contains(mv.Done, "deja de mostrarse") {
			mv.Record += " " + strings.Replace(expiryWords, "{fecha}", spanishDateTime(*d.ExpiresAt), 1)
		}
		if d.Status == schema.StatusOpen && d.Contact.Whatsapp == "" {
			mv.Record += " " + phoneReportedWords
		}
		if d.Status == schema.StatusResolved && d.Contact.Whatsapp != "" {
			mv.Record += " " + resolvedWords
		}
		if d.Status == schema.StatusExpired {
			mv.Record += " " + expiredWords
		}
		mv.Buttons = buttonsFor(d.Status)
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
	mv.ID, mv.Token = codesOf(r.PostForm.Get("id"), r.PostForm.Get("token"))
	action := r.PostForm.Get("action")
	if mv.ID == "" || mv.Token == "" {
		mv.Error = missingCodesWords
		return mv, http.StatusBadRequest
	}
	base, _ := h.baseURL(r)
	if action == responsesAction && h.o.Service != nil {
		if h.describe(r, base, mv); mv.Gone { // a withdrawn record's responses ended with it
			return mv, http.StatusOK
		}
		return h.manageResponses(r, mv)
	}
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
			if res.ExpiresAt != nil {
				mv.Done += " " + strings.Replace(expiryWords, "{fecha}", spanishDateTime(*res.ExpiresAt), 1)
			}
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
		ri := responseItem{Message: it.Message, Name: it.ContactName, Status: responseStatusWords[it.Status], Created: spanishDateTime(it.CreatedAt)}
		if waLink.MatchString(it.WhatsappURL) {
			// The number the link writes to, grouped for reading, not as it was typed («3112223344»).
			ri.WhatsappURL, ri.Phone = it.WhatsappURL, phoneText("+"+strings.TrimPrefix(it.WhatsappURL, "https://wa.me/"))
		}
		mv.Responses = append(mv.Responses, ri)
	}
	mv.Done = responsesSummary(helpers(list.Items, true), helpers(list.Items, false))
	return mv, http.StatusOK
}

// helpers is how many people the responses (the active ones only, with active) are from: one per number
// (a helper who answered again in other words is one person, as the public count has it), and one per
// response without a number.
func helpers(items []schema.ResponseView, active bool) int {
	seen := map[string]bool{}
	n := 0
	for _, it := range items {
		if active && it.Status != schema.ResponseActive {
			continue
		}
		if it.WhatsappURL != "" {
			if seen[it.WhatsappURL] {
				continue
			}
			seen[it.WhatsappURL] = true
		}
		n++
	}
	return n
}

// responsesSummaries are the words of responsesSummary, {n} standing for the number; gestionar.js reads
// them from the page (data-resumenes) to say the same when it lists the responses itself.
var responsesSummaries = map[string]string{
	"none":      "Nadie ha respondido todavía.",
	"inactive1": "Una persona respondió; su respuesta ya no está activa (abajo dice por qué).",
	"inactiveN": "{n} personas respondieron; ninguna respuesta sigue activa (abajo dice por qué).",
	"one":       "1 persona dice que está ayudando.",
	"many":      "{n} personas dicen que están ayudando.",
}

// responsesSummary says how many of the people who answered a record (total) are helping now (active).
func responsesSummary(active, total int) string {
	key, n := "many", active
	switch {
	case active == 0 && total == 0:
		key = "none"
	case active == 0 && total == 1:
		key = "inactive1"
	case active == 0:
		key, n = "inactiveN", total
	case active == 1:
		key = "one"
	}
	return strings.ReplaceAll(responsesSummaries[key], "{n}", strconv.Itoa(n))
}

// ResponsesSummaries are responsesSummaries as JSON, for the page.
func (mv *manageView) ResponsesSummaries() string {
	b, _ := json.Marshal(responsesSummaries)
	return string(b)
}

// codesOf are the record's id and manage token as the form sent them, or read from the manage link
// pasted whole into either field (schema.ManageURL: …/gestionar#id=…&token=…): without JavaScript the
// page cannot read the link's fragment, and the link is what a person has at hand.
func codesOf(id, token string) (string, string) {
	id, token = strings.TrimSpace(id), strings.TrimSpace(token)
	for _, typed := range []string{id, token} {
		_, codes, ok := strings.Cut(typed, "#")
		if !ok {
			_, codes, ok = strings.Cut(typed, "?")
		}
		if !ok {
			continue
		}
		if !strings.Contains(codes, "id=") { // the link's «=» and «&» escaped once more by the app it came through
			if codes, _ = url.QueryUnescape(codes); !strings.Contains(codes, "id=") {
				continue
			}
		}
		if v, err := url.ParseQuery(codes); err == nil && v.Get("id") != "" {
			id = strings.TrimSpace(v.Get("id"))
			if t := strings.TrimSpace(v.Get("token")); t != "" {
				token = t
			} else if token == typed {
				token = ""
			}
			return id, token
		}
	}
	return id, token
}
