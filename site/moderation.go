package site

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/schema"
)

// moderationPath is the volunteers' moderation page. It is served only to a request that the server
// authenticated (Caddy's basic_auth in front of it sets the user: Moderation.Moderator); without one it
// is 401, so that a Caddyfile without basic_auth never exposes it. It is in no menu, sitemap or llms.txt,
// never cached and never indexed.
const moderationPath = "/moderacion"

// The moderation actions a form posts (the service's names).
const (
	modHide            = "hide"
	modHidePhone       = "hide_phone"
	modRestore         = "restore"
	modErase           = "erase"
	modSetStatus       = "set_status"
	modRestoreReporter = "restore_reporter"
	modRestoreResponse = "restore_response"
)

// Moderation is what /moderacion needs of the service. Nil disables the page (404).
type Moderation struct {
	// Moderator is the name of the user the server authenticated for r, "" when none.
	Moderator func(r *http.Request) string
	// Queue is the moderation queue: the records with unreviewed reports and the hidden ones.
	Queue func(ctx context.Context) ([]ModerationItem, error)
	// Act applies action (hide, hide_phone, restore, erase, set_status with status) to record id on behalf of the
	// moderator that ctx carries; ErrNotFound when there is no such record.
	Act func(ctx context.Context, id, action, status string) error
	// RestoreReporter restores everything that one reporter (its hash) had hidden; it returns how many
	// records and how many responses.
	RestoreReporter func(ctx context.Context, reporter string) (records, responses int, err error)
	// RestoreResponse shows again response rid of record id, which reports hid; ErrNotFound when there is
	// no such hidden response.
	RestoreResponse func(ctx context.Context, id, rid string) error
	// Key is a server secret: the forms' tokens are a MAC of the moderator's name and the hour under it.
	Key func(ctx context.Context) ([]byte, error)
}

// ModerationItem is a record of the queue as the moderators see it (with its contact: the operator's own data).
type ModerationItem struct {
	ID, Type, EmergencySlug, Status, Title, Description string
	Category, Urgency                                   string
	// Where: the address and neighbourhood as written, and the DIVIPOLA place or municipio (codes).
	Address, Neighborhood, PlaceCode, MunicipioCode string
	ContactName, Phone                              string
	ContactHidden                                   bool
	CreatedAt                                       time.Time
	Reports                                         []ModerationReport
	HiddenResponses                                 []ModerationResponse
}

// ModerationResponse is a response («yo puedo ayudar») that reports hid, with what its responder wrote and
// the hashes of its reporters.
type ModerationResponse struct {
	ID, Message, ContactName, Phone string
	CreatedAt                       time.Time
	Reporters                       []string
}

// ModerationReport is a community report of a record; Reporter is the keyed hash that tells reporters apart.
type ModerationReport struct {
	Reason, Note, Reporter string
	At                     time.Time
	Reviewed               bool
}

// moderationView is what the page's template sees.
type moderationView struct {
	Who, Token  string
	Done, Error string
	Confirm     *modItem // the record whose erasure awaits confirmation
	Items       []modItem
	Reporters   []modReporter
}

type modItem struct {
	ID, Type, Status, Title, Description, Emergency, ContactName, Phone, Created string
	Category, Urgency, Where, URL                                                string
	ContactHidden, Hidden                                                        bool
	Statuses                                                                     []modOption
	Reports                                                                      []modReport
	Pending                                                                      int // unreviewed reports
	Responses                                                                    []modResponse
}

type modResponse struct {
	ID, Message, ContactName, Phone, Created string
	Reporters                                []string // shortened hashes
}

type modOption struct {
	Value, Label string
	Selected     bool
}

type modReport struct {
	Reason, Note, Reporter, At string
	Reviewed                   bool
}

type modReporter struct {
	Hash, Short      string
	Reports, Pending int // reports made; unreviewed ones on hidden records or phones (what restoring undoes)
}

// shortHash is how a reporter's hash is shown: its first 8 characters.
func shortHash(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

// shortTime is an instant in Colombia's time, briefly: «3 de septiembre, 14:05».
func shortTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.In(colombiaTime)
	return fmt.Sprintf("%d de %s, %02d:%02d", t.Day(), months[t.Month()-1], t.Hour(), t.Minute())
}

// serveModeration serves /moderacion: the queue (GET), an action (POST, then 303 back to the page).
func (h *handler) serveModeration(w http.ResponseWriter, r *http.Request, v *view) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Robots-Tag", "noindex, nofollow")
	hd.Del("Access-Control-Allow-Origin") // the page is for the moderators' browsers only
	m := h.o.Moderation
	if m == nil {
		h.writePage(w, r, v, notFoundPage, http.StatusNotFound, "no-store", false)
		return
	}
	who := m.Moderator(r)
	if who == "" {
		h.serveError(w, r, http.StatusUnauthorized, "")
		return
	}
	if !allowMethods(w, r, true) {
		return
	}
	key, err := m.Key(r.Context())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	now := time.Now()
	mv := &moderationView{Who: who, Token: modToken(key, who, now)}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		var done bool
		if status, done = h.moderate(w, r, v, m, key, who, now, mv); done {
			return
		}
	} else {
		mv.Done, mv.Error = modMessage(r.URL.Query())
	}
	items, err := m.Queue(r.Context())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	mv.fill(items, r.URL.Query().Get("borrar"))
	h.writePage(w, r, v, page{tmpl: "moderacion.md", mod: mv}, status, "no-store", false)
}

// moderate applies a form's POST. It answers the 303 back to the page itself (done), or leaves mv with
// the error to show on the page and returns its status.
func (h *handler) moderate(w http.ResponseWriter, r *http.Request, v *view, m *Moderation, key []byte, who string, now time.Time, mv *moderationView) (int, bool) {
	// Cross-site requests (CSRF: the browser sends the credentials to any page that posts here) are refused
	// by what browsers say of the request's origin, and by the page's token.
	if crossSite(r, v.base, true) {
		mv.Error = "Se rechazó la acción: no se envió desde esta página. Use los botones de abajo."
		return http.StatusForbidden, false
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		mv.Error = "No se pudo leer el formulario. Vuelva a intentarlo."
		return http.StatusBadRequest, false
	}
	f := r.PostForm
	if !checkModToken(key, who, now, f.Get("token")) {
		mv.Error = "El formulario venció o no es de esta página: no se cambió nada. Revise la publicación y vuelva a pulsar el botón."
		return http.StatusForbidden, false
	}
	id, action := strings.ToLower(strings.TrimSpace(f.Get("id"))), f.Get("action")
	back := url.Values{"hecho": {action}}
	var err error
	switch action {
	case modHide, modHidePhone, modRestore:
		err = m.Act(r.Context(), id, action, "")
	case modErase:
		if f.Get("confirmar") != "si" { // the confirmation step, without JavaScript
			http.Redirect(w, r, moderationPath+"?"+url.Values{"borrar": {id}}.Encode()+"#confirmar", http.StatusSeeOther)
			return 0, true
		}
		err = m.Act(r.Context(), id, action, "")
	case modSetStatus:
		st := f.Get("status")
		if !slices.Contains(schema.Statuses, st) {
			mv.Error = "Elija uno de los estados de la lista."
			return http.StatusBadRequest, false
		}
		if st == schema.StatusWithdrawn { // withdrawing erases: through the erasure's confirmation
			http.Redirect(w, r, moderationPath+"?"+url.Values{"borrar": {id}}.Encode()+"#confirmar", http.StatusSeeOther)
			return 0, true
		}
		err = m.Act(r.Context(), id, action, st)
		back.Set("estado", st)
	case modRestoreResponse:
		rid := strings.ToLower(strings.TrimSpace(f.Get("response")))
		if err = m.RestoreResponse(r.Context(), id, rid); err == nil {
			back.Set("respuesta", rid)
		}
	case modRestoreReporter:
		rep := f.Get("reporter")
		var n, nr int
		if n, nr, err = m.RestoreReporter(r.Context(), rep); err == nil || errors.Is(err, ErrNotFound) {
			err = nil
			back.Set("n", strconv.Itoa(n))
			back.Set("nr", strconv.Itoa(nr))
			back.Set("reporte", shortHash(rep))
		}
	default:
		mv.Error = "Esa acción no existe."
		return http.StatusBadRequest, false
	}
	if id != "" {
		back.Set("id", id)
	}
	if errors.Is(err, ErrErased) {
		back = url.Values{"error": {"borrada"}, "id": {id}}
	} else if errors.Is(err, ErrNotFound) && action == modRestoreResponse {
		back = url.Values{"error": {"sin_respuesta"}, "id": {id}}
	} else if errors.Is(err, ErrNotFound) {
		back = url.Values{"error": {"no_existe"}, "id": {id}}
	} else if err != nil {
		h.serverError(w, r, err)
		return 0, true
	}
	http.Redirect(w, r, moderationPath+"?"+back.Encode(), http.StatusSeeOther)
	return 0, true
}

// modMessage is the message of the redirect after an action (its query): what was done, or why not.
func modMessage(q url.Values) (done, fail string) {
	id := q.Get("id")
	if !validModID(id) {
		id = ""
	}
	switch q.Get("error") {
	case "no_existe":
		return "", "No existe la publicación " + id + ": no se cambió nada."
	case "borrada":
		return "", "La publicación " + id + " tiene sus datos personales borrados: no puede volver a mostrarse. No se cambió nada."
	case "sin_respuesta":
		return "", "Esa respuesta de la publicación " + id + " ya no está oculta (o no existe): no se cambió nada."
	}
	switch q.Get("hecho") {
	case modHide:
		return "Listo: la publicación " + id + " quedó oculta.", ""
	case modHidePhone:
		return "Listo: el teléfono de la publicación " + id + " ya no se muestra (la publicación sigue en las listas); sus reportes quedaron revisados.", ""
	case modRestore:
		return "Listo: la publicación " + id + " se muestra de nuevo, vigente y con su teléfono; sus reportes quedaron revisados.", ""
	case modErase:
		return "Listo: se borraron los datos personales de la publicación " + id + "; quedó retirada.", ""
	case modSetStatus:
		if l, ok := enumLabels[q.Get("estado")]; ok && slices.Contains(schema.Statuses, q.Get("estado")) {
			return "Listo: la publicación " + id + " quedó en estado «" + l + "».", ""
		}
	case modRestoreResponse:
		if rid := q.Get("respuesta"); validModID(rid) {
			return "Listo: la respuesta " + rid + " de la publicación " + id + " se muestra de nuevo a quien publicó; sus reportes quedaron revisados.", ""
		}
	case modRestoreReporter:
		n, _ := strconv.Atoi(q.Get("n"))
		nr, _ := strconv.Atoi(q.Get("nr"))
		rep := q.Get("reporte")
		if len(rep) > 8 {
			rep = rep[:8]
		}
		if n <= 0 && nr <= 0 {
			return "No había nada oculto por los reportes de " + rep + ": no se cambió nada.", ""
		}
		var what []string
		if n > 0 {
			what = append(what, countWords(n, "publicación", "publicaciones"))
		}
		if nr > 0 {
			what = append(what, countWords(nr, "respuesta", "respuestas"))
		}
		verb := "se restauraron "
		if n+nr == 1 {
			verb = "se restauró "
		}
		return "Listo: " + verb + strings.Join(what, " y ") + " que habían ocultado los reportes de " + rep + ".", ""
	}
	return "", ""
}

// moderationWhere is where a queued record says it is, for a moderator judging a «wrong place» or a
// fraud: its address and neighbourhood as written, and its place (or municipio) by name.
func moderationWhere(it ModerationItem) string {
	var parts []string
	for _, s := range []string{it.Address, it.Neighborhood} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	for _, code := range []string{it.PlaceCode, it.MunicipioCode} {
		if p, ok := places.Lookup(code); ok && code != "" {
			parts = append(parts, places.Label(p))
			break
		}
	}
	return strings.Join(parts, " · ")
}

// validModID tells whether id may be a record's id, to be shown back on the page.
func validModID(id string) bool {
	return len(id) <= 32 && !strings.ContainsFunc(id, func(c rune) bool { return !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') })
}

// fill builds the page's view of the queue; confirm is the id whose erasure the page asks to confirm.
func (mv *moderationView) fill(items []ModerationItem, confirm string) {
	byReporter := map[string]*modReporter{}
	for _, it := range items {
		mi := modItem{ID: it.ID, Type: enumLabels[it.Type], Status: cmp.Or(enumLabels[it.Status], it.Status), Title: it.Title,
			Description: it.Description, Emergency: it.EmergencySlug, ContactName: it.ContactName, Phone: it.Phone,
			Created: shortTime(it.CreatedAt), ContactHidden: it.ContactHidden, Hidden: it.Status == schema.StatusHidden,
			Category: enumLabels[it.Category], Urgency: enumLabels[it.Urgency], Where: moderationWhere(it), URL: schema.RecordPath(it.ID)}
		for _, s := range schema.Statuses {
			if s == schema.StatusWithdrawn && it.Status != s {
				continue // withdrawing erases: «Borrar datos personales…», which asks first
			}
			mi.Statuses = append(mi.Statuses, modOption{Value: s, Label: cmp.Or(enumLabels[s], s), Selected: s == it.Status})
		}
		for _, rp := range it.Reports {
			mi.Reports = append(mi.Reports, modReport{Reason: cmp.Or(reportLabels[rp.Reason].Label, rp.Reason), Note: rp.Note,
				Reporter: shortHash(rp.Reporter), At: shortTime(rp.At), Reviewed: rp.Reviewed})
			g := byReporter[rp.Reporter]
			if g == nil {
				g = &modReporter{Hash: rp.Reporter, Short: shortHash(rp.Reporter)}
				byReporter[rp.Reporter] = g
			}
			g.Reports++
			if !rp.Reviewed {
				mi.Pending++
				if mi.Hidden || mi.ContactHidden {
					g.Pending++
				}
			}
		}
		for _, hr := range it.HiddenResponses {
			mr := modResponse{ID: hr.ID, Message: hr.Message, ContactName: hr.ContactName, Phone: hr.Phone, Created: shortTime(hr.CreatedAt)}
			for _, rep := range hr.Reporters {
				mr.Reporters = append(mr.Reporters, shortHash(rep))
				g := byReporter[rep]
				if g == nil {
					g = &modReporter{Hash: rep, Short: shortHash(rep)}
					byReporter[rep] = g
				}
				g.Reports++
				g.Pending++
			}
			mi.Responses = append(mi.Responses, mr)
		}
		mv.Items = append(mv.Items, mi)
	}
	for i := range mv.Items {
		if confirm != "" && mv.Items[i].ID == confirm {
			mv.Confirm = &mv.Items[i]
		}
	}
	if mv.Confirm == nil && confirm != "" && validModID(confirm) { // a record no longer in the queue
		mv.Confirm = &modItem{ID: confirm}
	}
	for _, g := range byReporter {
		if g.Hash != "" {
			mv.Reporters = append(mv.Reporters, *g)
		}
	}
	slices.SortFunc(mv.Reporters, func(a, b modReporter) int {
		return cmp.Or(b.Reports-a.Reports, strings.Compare(a.Hash, b.Hash))
	})
}

// modToken is the forms' token for moderator who in the hour of t: a MAC under the server's key, so
// that another site cannot know it (CSRF).
func modToken(key []byte, who string, t time.Time) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("moderacion\x00" + who + "\x00" + strconv.FormatInt(t.Unix()/3600, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// checkModToken accepts the token of this hour and of the previous one (a page opened up to an hour ago).
func checkModToken(key []byte, who string, now time.Time, token string) bool {
	ok := false
	for _, t := range []time.Time{now, now.Add(-time.Hour)} {
		if hmac.Equal([]byte(modToken(key, who, t)), []byte(token)) {
			ok = true
		}
	}
	return ok
}

// countWords is n with the noun that agrees with it: «1 publicación», «2 publicaciones».
func countWords(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
