package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

type viewHelpArgs struct {
	ID string `json:"id" jsonschema:"pattern=^[0-9a-tv-zA-TV-Z]{16}$" jsonschema_description:"id del registro (de buscar_ayudas); no distingue mayúsculas."`
}

type panoramaArgs struct {
	EmergencySlug string `json:"emergencySlug,omitempty" jsonschema:"maxLength=64" jsonschema_description:"Solo esta emergencia; sin él, todas las activas."`
}

// readTools are the read-only tools, registered next to the publishing ones.
// mcpReadViews are the views the read tools answer, for the read latency metric.
var mcpReadViews = map[string]string{schema.ToolSearchHelp: schema.ViewList, schema.ToolViewHelp: schema.ViewDetail, schema.ToolPanorama: schema.ViewPanorama, schema.ToolMatches: backend.ReadViewMatches, schema.ToolFindPlace: backend.ReadViewPlaces}

func readTools(svc *backend.Service) []server.ServerTool {
	search := mcp.NewToolWithRawSchema(schema.ToolSearchHelp,
		"Busca en la red pública solicitudes de ayuda (request) y ofrecimientos (offer): por emergencia, tipo, categoría, urgencia, texto (q, sin distinguir tildes ni mayúsculas) "+
			"y cerca de un punto (latitude, longitude, radiusKm: del más cercano al más lejano, con distanceKm). Devuelve los más recientes primero, de a limit (máximo 100); "+
			"para ver más, vuelva a llamar con los mismos filtros y cursor = nextCursor. Las listas muestran el nombre de contacto pero no el teléfono: para contactar use ver_ayuda con el id. Solo lee.",
		mustJSON(schema.JSONSchema("ListQuery")))
	search.RawOutputSchema = mustJSON(schema.JSONSchema("HelpList"))
	annotate(&search, "Buscar solicitudes y ofrecimientos de ayuda", true)

	view := mcp.NewToolWithRawSchema(schema.ToolViewHelp,
		"Muestra un registro completo por su id, con el número de WhatsApp (E.164) y el enlace wa.me para contactar a la persona, publicados con su consentimiento. "+
			"Úselo solo para el registro que la persona quiere contactar. Solo lee.",
		mustJSON(schema.ReflectArgs(&viewHelpArgs{})))
	view.RawOutputSchema = mustJSON(schema.JSONSchema("PublicHelpDetail"))
	annotate(&view, "Ver un registro de ayuda con su contacto", true)

	panorama := mcp.NewToolWithRawSchema(schema.ToolPanorama,
		"Resume cada emergencia activa: cuántas solicitudes y ofrecimientos hay por categoría y urgencia, cuántas personas necesitan ayuda y cuándo llegó el registro más reciente. Solo lee.",
		mustJSON(schema.ReflectArgs(&panoramaArgs{})))
	panorama.RawOutputSchema = mustJSON(schema.JSONSchema("Panorama"))
	annotate(&panorama, "Consultar el panorama de las emergencias", true)

	matches := mcp.NewToolWithRawSchema(schema.ToolMatches,
		"Busca quién puede responder a un registro: para una solicitud, los ofrecimientos vigentes; para un ofrecimiento, las solicitudes vigentes; "+
			"de la misma emergencia y categoría, a menos de radiusKm (por defecto 25, máximo 100) del registro, del más cercano al más lejano (con distanceKm); a igual distancia, primero los que nadie ha respondido. "+
			"Un registro sin punto busca en su municipio. Devuelve hasta limit (por defecto 10, máximo 20), con el nombre de contacto pero sin teléfono: para contactar use ver_ayuda con el id. Solo lee.",
		mustJSON(schema.ReflectArgs(&schema.MatchesArgs{})))
	matches.RawOutputSchema = mustJSON(schema.JSONSchema("HelpMatches"))
	annotate(&matches, "Buscar coincidencias de una solicitud u ofrecimiento", true)

	return []server.ServerTool{
		{Tool: search, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var q schema.ListQuery
			req.Params.RawArguments = boolAsString(req.Params.RawArguments, "attended")
			if res := decodeArgs(schema.ToolSearchHelp, req, &q, checkSearch); res != nil {
				return res, nil
			}
			list, err := svc.List(ctx, mcpBase(ctx), q)
			if err != nil {
				return readProblem(schema.ToolSearchHelp, err), nil
			}
			return structuredResult(list, listText(list)), nil
		}},
		{Tool: view, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a viewHelpArgs
			if res := decodeArgs(schema.ToolViewHelp, req, &a, checkView); res != nil {
				return res, nil
			}
			if strings.TrimSpace(a.ID) == "" { // not helpDetail's message, which speaks of view=detail
				return mcp.NewToolResultError("Argumentos inválidos para " + schema.ToolViewHelp + ": «id» es obligatorio: el id de un registro, tomado de " + schema.ToolSearchHelp + "."), nil
			}
			d, err := svc.Detail(ctx, mcpBase(ctx), a.ID)
			if err != nil {
				return readProblem(schema.ToolViewHelp, err), nil
			}
			contact := fmt.Sprintf("WhatsApp %s (%s)", d.Contact.Whatsapp, d.Contact.WhatsappURL)
			if !d.Contact.Available { // expired, or its number reported as someone else's
				contact = "sin número visible (estado: " + backend.StatusWords[d.Status] + ")"
			}
			text := fmt.Sprintf("%s: %s (%s, %s). Contacto: %s, %s. Página: %s",
				typeLabel(d.Type), d.Title, d.Category, d.Emergency.Title, d.Contact.Name, contact, d.PublicURL)
			return structuredResult(d, text), nil
		}},
		{Tool: panorama, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a panoramaArgs
			if res := decodeArgs(schema.ToolPanorama, req, &a, checkPanorama); res != nil {
				return res, nil
			}
			p, err := svc.Panorama(ctx, mcpBase(ctx), strings.TrimSpace(a.EmergencySlug))
			if err != nil {
				return readProblem(schema.ToolPanorama, err), nil
			}
			var b strings.Builder
			for _, e := range p.Emergencies {
				fmt.Fprintf(&b, "- %s (%s): %d solicitudes, %d ofrecimientos, %d personas necesitan ayuda.\n", e.Title, e.Slug, e.Requests, e.Offers, e.NeededPeople)
			}
			return structuredResult(p, strings.TrimSpace(b.String())), nil
		}},
		{Tool: matches, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.MatchesArgs
			if res := decodeArgs(schema.ToolMatches, req, &a, checkMatches); res != nil {
				return res, nil
			}
			if strings.TrimSpace(a.ID) == "" {
				return mcp.NewToolResultError("Argumentos inválidos para " + schema.ToolMatches + ": «id» es obligatorio: el id de un registro, tomado de " + schema.ToolSearchHelp + " o de su publicación."), nil
			}
			m, err := svc.Matches(ctx, mcpBase(ctx), a.ID, a.MatchesQuery)
			if err != nil {
				return readProblem(schema.ToolMatches, err), nil
			}
			return structuredResult(m, matchesText(m)), nil
		}},
	}
}

// boolAsString turns the JSON booleans of the arguments named into the strings "true" and "false" that the
// API's query takes: an agent naturally sends attended: false.
func boolAsString(raw json.RawMessage, names ...string) json.RawMessage {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return raw // decodeArgs says what is wrong with it
	}
	changed := false
	for _, name := range names {
		if v := string(bytes.TrimSpace(args[name])); v == "true" || v == "false" {
			args[name], changed = json.RawMessage(`"`+v+`"`), true
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(args)
	if err != nil {
		return raw
	}
	return out
}

// matchesText is the human summary of a record's matches.
func matchesText(m *schema.HelpMatches) string {
	var b strings.Builder
	what := "ofrecimientos"
	if m.Type == schema.TypeRequest {
		what = "solicitudes"
	}
	switch m.MatchedBy {
	case schema.MatchedByNone:
		return "El registro no tiene punto ni municipio: no se pueden buscar " + what + " cerca."
	case schema.MatchedByMunicipio:
		fmt.Fprintf(&b, "%d %s vigentes de %s en su municipio (%s)", m.Returned, what, m.Category, m.Municipio)
	default:
		fmt.Fprintf(&b, "%d %s vigentes de %s a menos de %g km", m.Returned, what, m.Category, *m.RadiusKm)
	}
	if m.Returned == 0 {
		return b.String() + "."
	}
	b.WriteString(":")
	for _, it := range m.Items {
		fmt.Fprintf(&b, "\n- [%s] %s", it.ID, it.Title)
		if it.Location != nil && it.Location.DistanceKm != nil {
			fmt.Fprintf(&b, ", a %.1f km", *it.Location.DistanceKm)
		}
		fmt.Fprintf(&b, ". Contacto: %s. %s", it.Contact.Name, it.PublicURL)
	}
	return b.String()
}

// The read tools' input schemas, as validators: a tool refuses what its published schema refuses.
var (
	checkSearch   = schema.ArgsValidator(&schema.ListQuery{})
	checkView     = schema.ArgsValidator(&viewHelpArgs{})
	checkPanorama = schema.ArgsValidator(&panoramaArgs{})
	checkMatches  = schema.ArgsValidator(&schema.MatchesArgs{})
)

// decodeArgs reads the arguments strictly (an unknown name is an error that names it), then checks them
// against the tool's input schema; a non-nil result is the error to return.
func decodeArgs(tool string, req mcp.CallToolRequest, v any, check func([]byte) []schema.FieldError) *mcp.CallToolResult {
	raw := []byte(req.Params.RawArguments)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return mcp.NewToolResultError(fmt.Sprintf("Argumentos inválidos para %s: deben ser un objeto JSON. Revise el esquema de entrada y vuelva a llamar.", tool))
	}
	// The schema first: its messages are Spanish and name each argument; the strict decode then cannot fail
	// but on what the schema does not check.
	if details := check(raw); len(details) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Argumentos inválidos para %s: revise el esquema de entrada y vuelva a llamar.", tool)
		for _, d := range details {
			fmt.Fprintf(&b, "\n- %s: %s.", d.Field, d.Message)
		}
		return mcp.NewToolResultError(b.String())
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := "los argumentos no son un objeto JSON válido"
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			msg = fmt.Sprintf("el argumento %s no existe", name)
		}
		return mcp.NewToolResultError(fmt.Sprintf("Argumentos inválidos para %s: %s. Revise el esquema de entrada y vuelva a llamar.", tool, msg))
	}
	return nil
}

// readProblem explains a refused read so that the model can fix its call.
func readProblem(tool string, err error) *mcp.CallToolResult {
	p := backend.AsProblem(err)
	var b strings.Builder
	b.WriteString(toolErrorText(p.Body.Error))
	for _, d := range p.Body.Details {
		fmt.Fprintf(&b, "\n- %s: %s.", d.Field, d.Message)
	}
	if p.Body.DetailsOmitted > 0 {
		fmt.Fprintf(&b, "\n- … y %d problemas más.", p.Body.DetailsOmitted)
	}
	if p.Status >= 500 {
		fmt.Fprintf(&b, "\nEs un error temporal: vuelva a llamar a %s.", tool)
	}
	return mcp.NewToolResultError(b.String())
}

// structuredResult is a read tool's answer: v as structuredContent and, as the MCP specification asks of
// such tools, v serialized as JSON in the first text block; the human summary follows as a second one.
func structuredResult(v any, summary string) *mcp.CallToolResult {
	out := mcp.NewToolResultStructured(v, string(mustJSON(v)))
	if summary != "" {
		out.Content = append(out.Content, mcp.NewTextContent(summary))
	}
	return out
}

func typeLabel(t string) string {
	if t == schema.TypeOffer {
		return "Ofrecimiento"
	}
	return "Solicitud"
}

func listText(l *schema.HelpList) string {
	var b strings.Builder
	records := func(n int) string {
		if n == 1 {
			return "1 registro"
		}
		return fmt.Sprintf("%d registros", n)
	}
	switch {
	case l.Total == 0 && l.Returned == 0:
		b.WriteString("No hay registros con esos filtros.")
	case l.TotalExact:
		fmt.Fprintf(&b, "%s en total; estos son %d:", records(l.Total), l.Returned)
	case l.Filters.Total == schema.TotalNone: // a lower bound: the total was not counted
		fmt.Fprintf(&b, "Al menos %s (sin contar el total, como se pidió con total=none); estos son %d:", records(l.Total), l.Returned)
	case l.Filters.Attended != "": // an upper bound: the total counts the records whatever their responses
		fmt.Fprintf(&b, "Hasta %s en total; estos son %d:", records(l.Total), l.Returned)
	default:
		fmt.Fprintf(&b, "Unos %s en total (estimado); estos son %d:", records(l.Total), l.Returned)
	}
	for _, it := range l.Items {
		fmt.Fprintf(&b, "\n- [%s] %s: %s (%s", it.ID, typeLabel(it.Type), it.Title, strings.ToLower(schema.EnumLabel(it.Category)))
		if it.Urgency != "" {
			b.WriteString(", " + strings.ToLower(schema.EnumLabel(it.Urgency)))
		}
		if it.Location != nil && it.Location.DistanceKm != nil {
			fmt.Fprintf(&b, ", a %.1f km", *it.Location.DistanceKm)
		}
		fmt.Fprintf(&b, "). Contacto: %s. %s", it.Contact.Name, it.PublicURL)
	}
	if l.NextCursor != "" {
		fmt.Fprintf(&b, "\nHay más: llame de nuevo con los mismos filtros y cursor=%q.", l.NextCursor)
	}
	return b.String()
}
