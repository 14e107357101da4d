package site

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/directaid/directaid/schema"
)

// markdownFuncs are the helpers of the Markdown templates. Everything dynamic goes through md, code or
// fence, so that configuration text stays text.
var markdownFuncs = texttemplate.FuncMap{
	"md":         mdText,
	"code":       mdCode,
	"fence":      mdFence,
	"date":       spanishDate,
	"fields":     fieldTable,
	"errorCodes": errorCodeTable,
	"example":    exampleBody,
	"curlPost":   curlPost,
	"shq":        shellQuote,
	"query":      url.QueryEscape,
	"mcpConfig":  mcpConfig,
	"mcpCall":    mcpCall,
	"lower":      strings.ToLower,
	"curlGet":    func(url string) string { return "curl -s " + shellQuote(url) },
}

// HelpURL, OpenAPIURL and MCPURL are the absolute URLs of the API, for the templates.
func (d pageData) HelpURL() string { return d.Base + schema.HelpPath }

// DryRunURL validates a publication without storing it: the examples agents may copy use it.
func (d pageData) DryRunURL() string  { return d.Base + schema.HelpPath + "?dryRun=true" }
func (d pageData) OpenAPIURL() string { return d.Base + schema.OpenAPIPath }
func (d pageData) MCPURL() string     { return d.Base + schema.MCPPath }

// PlacesURL searches places by name: a place's DIVIPOLA code (placeCode) over HTTP.
func (d pageData) PlacesURL() string { return d.Base + schema.PlaceSearchPath }

// RecordURLPattern is the absolute URL of any record's page, with {id} for its id.
func (d pageData) RecordURLPattern() string { return d.Base + schema.RecordPathPrefix + "{id}" }

// ListURL is a view=list URL of the API with more parameters (each "&name=value"), limited to the
// examples' emergency when there is one.
func (d pageData) ListURL(params string) string {
	u := d.HelpURL() + "?view=" + schema.ViewList
	if d.ExampleSlug != "" {
		u += "&emergencySlug=" + url.QueryEscape(d.ExampleSlug)
	}
	return u + params
}

// ReportReasons are the reasons a report takes, each in code, comma-separated.
func (pageData) ReportReasons() string {
	out := make([]string, len(schema.ReportReasons))
	for i, r := range schema.ReportReasons {
		out[i] = "`" + r + "`"
	}
	return strings.Join(out, ", ")
}

// MaxListLimit is the largest page of a list.
func (pageData) MaxListLimit() int { return schema.MaxListLimit }

var months = [...]string{"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
	"septiembre", "octubre", "noviembre", "diciembre"}

// monthNames are months, comma-separated, for the scripts that write a date as spanishDateTime does
// (colombiaTime in site.js).
func monthNames() string { return strings.Join(months[:], ",") }

// spanishDate writes YYYY-MM-DD the way a Colombian reader says it; anything else is returned as is.
func spanishDate(s string) string {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return s
	}
	return spanishDay(t)
}

func spanishDay(t time.Time) string {
	return fmt.Sprintf("%d de %s de %d", t.Day(), months[t.Month()-1], t.Year())
}

// spanishDateTime is an instant in Colombia's time, the way a Colombian reader says it.
func spanishDateTime(t time.Time) string {
	t = t.In(colombiaTime)
	return fmt.Sprintf("%s a las %02d:%02d (hora de Colombia)", spanishDay(t), t.Hour(), t.Minute())
}

// rateLimitText is the publishing limit in words, or "" when none is configured.
func rateLimitText(events int, window time.Duration) string {
	if events <= 0 || window <= 0 {
		return ""
	}
	unit := "publicaciones"
	if events == 1 {
		unit = "publicación"
	}
	var per string
	switch {
	case window == time.Second:
		per = "por segundo"
	case window == time.Minute:
		per = "por minuto"
	case window == time.Hour:
		per = "por hora"
	case window%time.Hour == 0:
		per = fmt.Sprintf("cada %d horas", window/time.Hour)
	case window%time.Minute == 0:
		per = fmt.Sprintf("cada %d minutos", window/time.Minute)
	default:
		per = fmt.Sprintf("cada %d segundos", int(window.Round(time.Second)/time.Second))
	}
	return fmt.Sprintf("%d %s %s", events, unit, per)
}

// errorCodeTable renders the error codes of schema.ErrorBody (schema.ErrorCodes, the OpenAPI enum's
// order) with their status and meaning.
func errorCodeTable() (string, error) {
	var b strings.Builder
	b.WriteString("| Código | Estado HTTP | Significado |\n|---|---|---|\n")
	for _, e := range schema.ErrorCodes {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", mdCode(e.Code), e.Status, e.Meaning)
	}
	return b.String(), nil
}

// exampleBody is a valid publish body of type typ for the emergency slug (none when slug is empty),
// built from the wire types so that it cannot drift from what the API accepts. It says it is a test,
// so that running the example as written misleads nobody.
func exampleBody(typ, slug string) (string, error) {
	common := schema.Common{Source: "mi-aplicacion", ExternalID: "ejemplo-" + typ + "-1", EmergencySlug: slug,
		Content:     schema.Content{Category: "otro", Description: "Registro de prueba enviado con el ejemplo de la guía de integración."},
		ContactName: "Prueba de integración", ContactWhatsapp: "+57 300 123 4567", PublishContact: true}
	var v any
	switch typ {
	case schema.TypeRequest:
		common.Title = "Prueba: no es una solicitud real"
		lat, lon, people := 4.5339, -75.6811, 2
		v = schema.Request{Type: typ, Common: common, Address: "Calle 10 # 5-20", Neighborhood: "Centro",
			Latitude: &lat, Longitude: &lon, Needs: schema.Needs{Urgency: "needed", NeededPeople: &people}}
	case schema.TypeOffer:
		common.Title = "Prueba: no es un ofrecimiento real"
		v = schema.Offer{Type: typ, Common: common, Address: "Carrera 14 # 20-35", CenterStatus: schema.CenterStatus{CollectionCenterStatus: "needs_volunteers"}}
	default:
		return "", fmt.Errorf("site: no example for type %q", typ)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// curlPost is a curl command that POSTs body as JSON to url, with extra headers.
func curlPost(url, body string, headers ...string) string {
	var b strings.Builder
	b.WriteString("curl -i -X POST " + shellQuote(url) + " \\\n  -H 'Content-Type: application/json' \\\n")
	for _, h := range headers {
		b.WriteString("  -H " + shellQuote(h) + " \\\n")
	}
	b.WriteString("  --data-binary " + shellQuote(body))
	return b.String()
}

// mcpConfig is the client configuration that connects an MCP client to url.
func mcpConfig(url string) (string, error) {
	cfg := map[string]any{"mcpServers": map[string]any{"directaid": map[string]any{"url": url}}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return string(b), err
}

// mcpCall is a JSON-RPC request to the MCP endpoint.
func mcpCall(id int, method string) (string, error) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if method == "initialize" {
		msg["params"] = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "curl", "version": "1.0"}}
	}
	b, err := json.Marshal(msg)
	return string(b), err
}
