package schema

import (
	"net/url"
	"time"
)

// The publisher's capability: each publication's 201 carries a manage token; the publisher
// sends it in the Authorization header (Bearer) to act on the record. No account, no registration.
const (
	// ManagePath is the site's page where a publisher acts on a record with its manage link.
	ManagePath = "/gestionar"
	// ActionsSuffix follows HelpPath + "/{id}" in the path of the publisher's actions.
	ActionsSuffix = "/actions"
	// ManageTokenScheme is the Authorization scheme of the token: "Authorization: Bearer <token>". Caddy's
	// access log redacts that header, and a header never ends up in a URL.
	ManageTokenScheme = "Bearer"
)

// The codes of the publisher's actions.
const (
	CodeUnauthorized      = "unauthorized" // 401: no Authorization: Bearer at all
	CodeForbidden         = "forbidden"
	CodeInvalidTransition = "invalid_transition"
	CodeTooManyResponses  = "too_many_responses" // 409: the record holds its most responses
	// CodeNetworkShareSpent is the 429 of a network that already gave a record its share of responses.
	CodeNetworkShareSpent = "network_share_spent"
)

// The publisher's actions.
const (
	ActionResolve  = "resolve"
	ActionReopen   = "reopen"
	ActionWithdraw = "withdraw"
	ActionRenew    = "renew"
)

// Actions lists the publisher's actions.
var Actions = []string{ActionResolve, ActionReopen, ActionWithdraw, ActionRenew}

// ActionsPath is the path of the publisher's actions on record id.
func ActionsPath(id string) string { return HelpPath + "/" + url.PathEscape(id) + ActionsSuffix }

// ManageURL is the manage link of a record: the site's page, with the id and the token in the fragment
// (a browser never sends a fragment to a server, so no log sees the token).
func ManageURL(base, id, token string) string {
	return base + ManagePath + "#" + url.Values{"id": {id}, "token": {token}}.Encode()
}

// ActionRequest is the body of POST /api/public/v1/help/{id}/actions.
type ActionRequest struct {
	Action string `json:"action" jsonschema:"enum=resolve,enum=reopen,enum=withdraw,enum=renew" jsonschema_description:"resolve: marcar como resuelta (ya no se necesita, o ya no está disponible). reopen: volver a abrirla. withdraw: retirarla; el nombre, el teléfono y la dirección exacta se borran y no se pueden recuperar. renew: renovar una publicación abierta o vencida por otro plazo."`
}

// ActionResult is the body of a 200 answer to a publisher's action.
type ActionResult struct {
	OK        bool       `json:"ok" jsonschema_description:"Siempre true en 200."`
	ID        string     `json:"id"`
	Action    string     `json:"action" jsonschema:"enum=resolve,enum=reopen,enum=withdraw,enum=renew"`
	Changed   bool       `json:"changed" jsonschema_description:"false si el registro ya estaba así (cada acción se puede repetir sin efecto)."`
	Status    string     `json:"status" enum:"statuses"`
	UpdatedAt time.Time  `json:"updatedAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty" jsonschema_description:"Cuándo vence, mientras está abierta."`
	PublicURL string     `json:"publicUrl" jsonschema:"format=uri"`
}

// ManageArgs is the input of the MCP tool actualizar_publicacion: the record, its manage token and the action.
type ManageArgs struct {
	ID          string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro (16 caracteres), el que recibió al publicarla."`
	ManageToken string `json:"manageToken" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"El código para gestionar (manageToken) que recibió al publicarla. No lo muestre a nadie más."`
	ActionRequest
}
