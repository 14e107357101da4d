package caddymodule

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The operator's moderation on Caddy's admin endpoint (the shipped Caddyfiles put it on a unix socket
// that only the service's user and root can open):
//
//	GET  /directaid/moderation/queue            records with unreviewed reports, hidden ones and those with
//	                                             responses hidden by reports, with their reports and those responses
//	POST /directaid/moderation/hide     {"id"}  hide until reviewed
//	POST /directaid/moderation/hide_phone {"id"}  hide its number on this record only, reports reviewed
//	POST /directaid/moderation/restore  {"id"}  shown again in the status it had, phone shown again, reports reviewed
//	POST /directaid/moderation/erase    {"id"}  remove every personal field; the record stays as a tombstone
//	POST /directaid/moderation/status   {"id", "status"}  set any status
//	POST /directaid/moderation/restore_response {"id", "responseId"}  show again a response reports hid
//	POST /directaid/moderation/restore_reporter {"reporter"}  restore every hidden record (or phone) and
//	                                             response that reporter (its hash in the queue) reported
//	GET  /directaid/moderation/audit?after=&limit=  the audit trail, oldest first
//	POST /directaid/moderation/maintain         run the store's maintenance cycle now (erasure rewrite)
//
// `directaid moderate …` calls them.
const moderationPrefix = "/directaid/moderation/"

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "moderate",
		Usage: "queue | hide <id> | hide-phone <id> | restore <id> | restore-response <id> <responseId> | restore-reporter <hash> | erase <id> | status <id> <status> | audit [--after n] [--limit n] | maintain  [--admin <address> | --config <Caddyfile>]",
		Short: "Moderates records through the running server's admin endpoint",
		Long: `Calls the running server's admin endpoint: --admin, else the admin address of the --config file,
else $CADDY_ADMIN, else the shipped one, ` + DefaultAdminSocket + `:
  queue                  the records with unreviewed community reports, the hidden ones and those with
                         responses hidden by reports, with their reports and those responses
  hide <id>              hides a record until it is reviewed
  hide-phone <id>        hides only its phone on this record (the record stays listed), marking its
                         reports reviewed
  restore <id>           shows it again (in the status it had when hidden: open, resolved or expired;
                         its phone shown), marking its reports reviewed
  restore-response <id> <responseId>
                         shows again a «yo puedo ayudar» that reports hid (the queue lists them under
                         their record), marking its reports reviewed
  restore-reporter <hash>  restores every hidden record, hidden phone and hidden response that one reporter
                         reported (its hash is in the queue): the way back from one address's campaign;
                         a phone another reporter hid and a record an operator hid stay hidden
  erase <id>             removes its contact name, phone and exact place for good; the record stays as a
                         withdrawn tombstone (its bytes leave the database files at the next maintenance cycle)
  status <id> <status>   sets any status (open, resolved, withdrawn, expired, hidden); withdrawn erases, as erase
  audit                  the audit trail of moderation and publisher actions, oldest first
  maintain               runs the database's maintenance cycle now, so that what was erased leaves its
                         files at once rather than within the cycle's period (Badger; no-op on PostgreSQL)
Every action is written to the audit trail as done by the operator. Output is JSON.`,
		CobraFunc: func(cmd *cobra.Command) {
			addAdminFlags(cmd)
			cmd.Flags().Int("after", 0, "audit: entries after this seq")
			cmd.Flags().Int("limit", 100, "audit: at most this many entries")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(moderateCmd)
		},
	})
}

func moderateCmd(fl caddycmd.Flags) (int, error) {
	args := fl.Args()
	usage := errors.New("usage: directaid moderate queue | hide <id> | hide-phone <id> | restore <id> | restore-response <id> <responseId> | restore-reporter <hash> | erase <id> | status <id> <status> | audit [--after n] [--limit n] | maintain")
	if len(args) == 0 {
		return caddy.ExitCodeFailedStartup, usage
	}
	var method, uri string
	var body []byte
	switch verb := args[0]; {
	case verb == "maintain" && len(args) == 1:
		method, uri = http.MethodPost, moderationPrefix+"maintain"
	case verb == "queue" && len(args) == 1:
		method, uri = http.MethodGet, moderationPrefix+"queue"
	case verb == "audit" && len(args) == 1:
		method, uri = http.MethodGet, moderationPrefix+"audit?after="+strconv.Itoa(fl.Int("after"))+"&limit="+strconv.Itoa(fl.Int("limit"))
	case (verb == "hide" || verb == "restore" || verb == "erase") && len(args) == 2:
		method, uri = http.MethodPost, moderationPrefix+verb
		body, _ = json.Marshal(map[string]string{"id": args[1]})
	case verb == "hide-phone" && len(args) == 2:
		method, uri = http.MethodPost, moderationPrefix+backend.ActionHidePhone
		body, _ = json.Marshal(map[string]string{"id": args[1]})
	case verb == "restore-response" && len(args) == 3:
		method, uri = http.MethodPost, moderationPrefix+"restore_response"
		body, _ = json.Marshal(map[string]string{"id": args[1], "responseId": args[2]})
	case verb == "restore-reporter" && len(args) == 2:
		method, uri = http.MethodPost, moderationPrefix+"restore_reporter"
		body, _ = json.Marshal(map[string]string{"reporter": args[1]})
	case verb == "status" && len(args) == 3:
		method, uri = http.MethodPost, moderationPrefix+"status"
		body, _ = json.Marshal(map[string]string{"id": args[1], "status": args[2]})
	default:
		return caddy.ExitCodeFailedStartup, usage
	}
	admin, err := adminAddress(fl)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	hdr := http.Header{}
	if body != nil {
		hdr.Set("Content-Type", "application/json")
	}
	resp, err := caddycmd.AdminAPIRequest(admin, method, uri, hdr, bytes.NewReader(body))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	fmt.Println()
	return caddy.ExitCodeSuccess, nil
}

// moderationHandler serves the routes above.
func moderationHandler(w http.ResponseWriter, r *http.Request) error {
	app, err := currentApp()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	svc := app.current.Load()
	if svc == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: errors.New("not started")}
	}
	ctx := r.Context()
	action := strings.TrimPrefix(r.URL.Path, moderationPrefix)
	var out any
	switch action {
	case "queue", "audit":
		if r.Method != http.MethodGet {
			return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
		}
		if action == "queue" {
			out, err = svc.ModerationQueue(ctx)
			break
		}
		q := r.URL.Query()
		after, errAfter := strconv.ParseInt(cmp.Or(q.Get("after"), "0"), 10, 64)
		limit, errLimit := strconv.Atoi(cmp.Or(q.Get("limit"), "100"))
		if errAfter != nil || errLimit != nil || after < 0 || limit < 1 || limit > 1000 {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New("audit: after is a seq (0 or more), limit 1 to 1000")}
		}
		var entries []store.AuditEntry
		entries, err = svc.AuditTrail(ctx, after, limit)
		if entries == nil {
			entries = []store.AuditEntry{}
		}
		out = entries
	case "maintain":
		if r.Method != http.MethodPost {
			return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
		}
		err = app.store.Maintain(ctx)
		out = map[string]bool{"ran": true}
	case backend.ActionHide, backend.ActionHidePhone, backend.ActionRestore, backend.ActionErase, "status":
		if r.Method != http.MethodPost {
			return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
		}
		var in struct{ ID, Status string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil || in.ID == "" {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(`body: {"id": "…"} (and "status" for status)`)}
		}
		if action == "status" {
			action = backend.ActionSetStatus
		}
		out, err = svc.Moderate(ctx, store.NormalizeID(in.ID), action, in.Status)
	case backend.ActionRestoreResponse:
		if r.Method != http.MethodPost {
			return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
		}
		var in struct{ ID, ResponseID string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil || in.ID == "" || in.ResponseID == "" {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(`body: {"id": "…", "responseId": "…"} (from the queue's hiddenResponses)`)}
		}
		err = svc.RestoreResponse(ctx, in.ID, in.ResponseID)
		out = map[string]string{"restored": in.ID + schema.ResponsesSuffix + "/" + strings.ToLower(in.ResponseID)}
	case "restore_reporter":
		if r.Method != http.MethodPost {
			return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use POST")}
		}
		var in struct{ Reporter string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil || in.Reporter == "" {
			return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: errors.New(`body: {"reporter": "<the reporter's hash, from the queue>"}`)}
		}
		var ids []string
		ids, err = svc.RestoreByReporter(ctx, in.Reporter)
		out = map[string][]string{"restored": ids}
	default:
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("unknown moderation route %q", url.PathEscape(action))}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return caddy.APIError{HTTPStatus: http.StatusNotFound, Err: err}
	case errors.Is(err, backend.ErrBadStatus), errors.Is(err, backend.ErrAmbiguousReporter):
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	case errors.Is(err, backend.ErrErased):
		return caddy.APIError{HTTPStatus: http.StatusConflict, Err: err}
	case err != nil:
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(out)
}
