// Package mcpserver is directaid's MCP server over a backend.Service (mcp-go, stateless, one JSON-RPC
// POST at a time): the publishing, read and record tools, and its HTTP endpoint (CORS, body bounds,
// DNS-rebinding protection, Spanish JSON-RPC errors). Its tools call the same Service operations as the
// HTTP API, so a rule holds on every channel.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// EmergencyList is the structured result of listar_emergencias (MCP wants an object, not an array).
type EmergencyList struct {
	Emergencies []schema.EmergencyInfo `json:"emergencies"`
}

// mcpIntro and mcpHowTo frame the list of tools in the server's instructions (mcpInstructions).
const mcpIntro = `Red pública de ayuda directa para emergencias en Colombia. Con estas herramientas usted publica, en nombre de una persona, una solicitud o un ofrecimiento de ayuda, y encuentra la ayuda ya publicada; lo publicado aparece en un sitio web público, con el nombre y el WhatsApp de contacto, para que la gente se contacte directamente.`

const mcpHowTo = `Para publicar: 1) llame a listar_emergencias para conocer las emergencias activas y su slug; 2) reúna con la persona los datos del esquema de la herramienta (si no sabe sus coordenadas, busque el código de su lugar con buscar_lugar); 3) pregúntele si acepta que su nombre y su número se muestren públicamente (publishContact: true solo si acepta); 4) publique. Si algo falla, el resultado dice qué campo corregir; reintentar con el mismo source y externalId nunca crea duplicados.`

// mcpInstructions are the server's instructions: the frame and one line per registered tool.
func mcpInstructions(tools []schema.MCPTool) string {
	var b strings.Builder
	b.WriteString(mcpIntro + "\nHerramientas:\n")
	for _, t := range tools {
		b.WriteString("- " + t.Name + ": " + t.Summary + ".\n")
	}
	b.WriteString(mcpHowTo)
	return b.String()
}

const idempotencyHelp = `Idempotencia: source es el nombre de su aplicación o asistente (por ejemplo "asistente-ia") y externalId un identificador único que usted genera para este registro (por ejemplo un UUID). Si la llamada falla o no sabe si funcionó, repítala con los mismos source y externalId: no se crea un duplicado y recibe el mismo id (duplicate: true). Para publicar otro registro use un externalId nuevo.`

const consentHelp = `Consentimiento: el nombre y el número de WhatsApp de contacto se publican. Antes de llamar, pregunte explícitamente a la persona si acepta que se muestren públicamente; envíe publishContact: true solo si acepta. Nunca lo asuma.`

const emergencyHelp = `Emergencia: si hay más de una emergencia activa, emergencySlug es obligatorio; llame a listar_emergencias y pregunte a la persona a cuál corresponde.`

// newMCPServer builds the MCP server over svc, and returns it with its tools as the documents list
// them. It is stateless: every tool call stands alone.
func newMCPServer(svc *backend.Service) (*server.MCPServer, []schema.MCPTool) {
	tools := mcpTools(svc)
	docs := toolDocs(tools)
	s := server.NewMCPServer("directaid", schema.APIVersion,
		server.WithTitle("Red pública de ayuda directa"),
		server.WithInstructions(mcpInstructions(docs)),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		// Counts every tool call by tool and outcome (the tool is always a registered one).
		server.WithToolHandlerMiddleware(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
			return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				start := time.Now()
				res, err := next(ctx, req)
				svc.Observe().MCPCall(req.Params.Name, err != nil || (res != nil && res.IsError))
				if view, ok := mcpReadViews[req.Params.Name]; ok {
					svc.Observe().Read(view, "mcp", start)
				}
				return res, err
			}
		}),
	)
	s.AddTools(tools...)
	return s, docs
}

// mcpTools are the tools of the MCP server, in the order tools/list and the documents show them.
func mcpTools(svc *backend.Service) []server.ServerTool {
	list := mcp.NewToolWithRawSchema(schema.ToolListEmergencies,
		"Lista las emergencias activas (terremotos, inundaciones…) en las que se puede publicar ayuda: slug, título, resumen, lugar, fecha y enlaces. "+
			"Llámela antes de publicar: el slug es el valor de emergencySlug, obligatorio cuando hay más de una emergencia activa (pregunte entonces a la persona a cuál corresponde). Solo lee; no cambia nada.",
		json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`))
	list.RawOutputSchema = mustJSON(map[string]any{
		"type": "object", "required": []string{"emergencies"}, "additionalProperties": false,
		"properties": map[string]any{"emergencies": map[string]any{"type": "array", "items": schema.JSONSchema("Emergency")}},
	})
	annotate(&list, "Listar emergencias activas", true)

	place := mcp.NewToolWithRawSchema(schema.ToolFindPlace,
		"Convierte el lugar que dice la persona («estoy en El Caimo», «en Calarcá») en su código DIVIPOLA (DANE): el placeCode de publicar_solicitud y publicar_ofrecimiento "+
			"cuando la persona no sabe sus coordenadas, y el municipioCode del filtro municipio de buscar_ayudas. Busca municipios y centros poblados sin importar tildes ni mayúsculas; "+
			"con emergencySlug, los de la zona de esa emergencia salen primero. Devuelve hasta 10, el más parecido primero: si hay varios posibles, pregunte a la persona cuál es "+
			"(por su municipio o departamento) antes de publicar. Si no hay ninguno, pídale el nombre de su municipio. Solo lee.",
		mustJSON(schema.ReflectArgs(&schema.PlaceArgs{})))
	place.RawOutputSchema = mustJSON(schema.ReflectArgs(&schema.PlaceList{}))
	annotate(&place, "Buscar el código de un lugar", true)

	return append([]server.ServerTool{
		server.ServerTool{Tool: list, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// No arguments: an unknown one is refused by name, as every tool refuses it.
			if res := decodeArgs(schema.ToolListEmergencies, req, &struct{}{}, func([]byte) []schema.FieldError { return nil }); res != nil {
				return res, nil
			}
			return emergenciesResult(svc.ActiveEmergencies(mcpBase(ctx))), nil
		}},
		server.ServerTool{Tool: place, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.PlaceArgs
			if res := decodeArgs(schema.ToolFindPlace, req, &a, checkPlace); res != nil {
				return res, nil
			}
			found, err := svc.FindPlaces(a.Q, a.EmergencySlug)
			if err != nil {
				return readProblem(schema.ToolFindPlace, err), nil
			}
			return structuredResult(found, placesText(a.Q, found, len(svc.EmergencyArea(strings.TrimSpace(a.EmergencySlug))) > 0)), nil
		}},
		publishTool(svc, schema.ToolPublishRequest, schema.TypeRequest, "Publicar una solicitud de ayuda",
			"Publica una solicitud de ayuda: una persona o comunidad afectada por una emergencia necesita alimentos, salud, refugio, transporte, rescate u otra ayuda. "+
				"Queda visible en el sitio web público para que quien pueda ayudar escriba por WhatsApp. Para ofrecer ayuda use publicar_ofrecimiento.\n\n"+
				"Datos: los campos y sus límites están en el esquema de entrada. La dirección es obligatoria, y el lugar: las coordenadas (latitude, longitude, en Colombia) o, si la persona no las sabe, el código DIVIPOLA de su municipio o centro poblado (placeCode, que da buscar_lugar a partir del nombre); pídale el lugar exacto."),
		publishTool(svc, schema.ToolPublishOffer, schema.TypeOffer, "Publicar un ofrecimiento de ayuda",
			"Publica un ofrecimiento de ayuda: una persona, negocio o centro de acopio ofrece alimentos, salud, refugio, transporte, rescate u otra ayuda a los afectados por una emergencia. "+
				"Queda visible en el sitio web público para que quien la necesite escriba por WhatsApp. Para pedir ayuda use publicar_solicitud.\n\n"+
				"Datos: los campos y sus límites están en el esquema de entrada; la ubicación es opcional. Un centro de acopio puede indicar su estado en collectionCenterStatus."),
	}, append(readTools(svc), manageTools(svc)...)...)
}

var checkPlace = schema.ArgsValidator(&schema.PlaceArgs{})

// placesText is the human summary of buscar_lugar's answer; withArea when the emergency named has an
// area, whose places it marks, and those outside it.
func placesText(q string, found *schema.PlaceList, withArea bool) string {
	if len(found.Places) == 0 && len(found.Guesses) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Ningún municipio ni centro poblado se llama %s. Nombres parecidos (un error de escritura): pregunte a la persona si quiso decir uno de ellos antes de usarlo (placeCode: lugar):", schema.Quote(q))
		for _, p := range found.Guesses {
			fmt.Fprintf(&b, "\n- %s: %s", p.PlaceCode, p.Place)
		}
		return b.String()
	}
	if len(found.Places) == 0 {
		return fmt.Sprintf("Ningún municipio ni centro poblado se llama %s: pida a la persona el nombre de su municipio (o su vereda y su municipio) y vuelva a buscar.", schema.Quote(q))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d lugares para %s (placeCode: lugar):", len(found.Places), schema.Quote(q))
	outside := false
	for _, p := range found.Places {
		fmt.Fprintf(&b, "\n- %s: %s", p.PlaceCode, p.Place)
		switch {
		case p.InArea:
			b.WriteString(", en la zona de la emergencia")
		case withArea:
			b.WriteString(", FUERA de la zona de la emergencia")
			outside = true
		}
	}
	if outside {
		b.WriteString("\nUn lugar fuera de la zona de la emergencia puede ser otro con el mismo nombre: antes de publicar con él, " +
			"confirme con la persona su municipio y su departamento.")
	}
	return b.String()
}

// annotate sets the title (both where 2025-03-26 and 2025-06-18+ clients look) and the behaviour hints:
// publishing is idempotent by (source, externalId) and never destroys anything; it writes to the open web.
func annotate(t *mcp.Tool, title string, readOnly bool) {
	t.Title = title
	no, yes := false, true
	t.Annotations = mcp.ToolAnnotation{Title: title, ReadOnlyHint: &readOnly, DestructiveHint: &no, IdempotentHint: &yes, OpenWorldHint: &yes}
	if readOnly {
		t.Annotations.OpenWorldHint = &no
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // reflected schemas and plain maps always marshal
	}
	return b
}

type mcpBaseKey struct{}

type mcpClientKey struct{}

// mcpContext carries the request's public base URL (links in results) and the client's address (what
// tells reporters apart, as for POST reports) to the tool handlers.
func mcpContext(svc *backend.Service) server.HTTPContextFunc {
	return func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(context.WithValue(ctx, mcpBaseKey{}, svc.BaseURL(r)), mcpClientKey{}, backend.ClientIP(r))
	}
}

func mcpClient(ctx context.Context) string {
	ip, _ := ctx.Value(mcpClientKey{}).(string)
	return ip
}

func mcpBase(ctx context.Context) string {
	base, _ := ctx.Value(mcpBaseKey{}).(string)
	return base
}

func emergenciesResult(list []schema.EmergencyInfo) *mcp.CallToolResult {
	var b strings.Builder
	switch len(list) {
	case 0:
		b.WriteString("No hay ninguna emergencia activa: ahora no se puede publicar. Dígaselo a la persona.")
	case 1:
		b.WriteString("Hay una emergencia activa; emergencySlug puede omitirse al publicar:\n")
	default:
		fmt.Fprintf(&b, "Hay %d emergencias activas. Pregunte a la persona a cuál corresponde su caso y envíe ese slug en emergencySlug:\n", len(list))
	}
	for _, e := range list {
		fmt.Fprintf(&b, "- %s: %s", e.Slug, e.Title)
		if where := strings.Trim(e.Location+", "+e.OccurredOn, ", "); where != "" {
			fmt.Fprintf(&b, " (%s)", where)
		}
		if e.Summary != "" {
			b.WriteString(". " + e.Summary)
		}
		b.WriteString("\n")
	}
	return structuredResult(EmergencyList{Emergencies: list}, strings.TrimSpace(b.String()))
}

// publishTool is a publishing tool; what tells a model what the record is and when to use the tool. Its
// handler validates the raw arguments with our own validator (not mcp-go's, whose messages a model cannot
// act on) through the same Service.Publish as POST help, with the type the tool stands for.
func publishTool(svc *backend.Service, name, typ, title, what string) server.ServerTool {
	t := mcp.NewToolWithRawSchema(name, what+"\n"+emergencyHelp+"\n"+consentHelp+"\n"+idempotencyHelp+
		"\nSi el resultado es un error, su texto dice qué campo corregir y cómo.", schema.ToolInputSchema(typ))
	// A publication's result, or a dry run's (dryRun: true).
	t.RawOutputSchema = mustJSON(map[string]any{"type": "object", "oneOf": []any{schema.JSONSchema("PublishResult"), schema.JSONSchema("DryRunResult")}})
	annotate(&t, title, false)
	return server.ServerTool{Tool: t, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := []byte(req.Params.RawArguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}") // so that the error lists every required field
		}
		start := time.Now()
		if len(args) > schema.MaxBodyBytes {
			svc.Observe().Published(backend.ChannelMCP, start, nil, false, &backend.Problem{Status: http.StatusRequestEntityTooLarge, Body: schema.ErrorBody{Code: schema.CodeBodyTooLarge}})
			return mcp.NewToolResultError(fmt.Sprintf("No se publicó: los argumentos ocupan más de %d KiB. Acorte la descripción y vuelva a llamar a %s.", schema.MaxBodyBytes>>10, name)), nil
		}
		args, dry, p := takeDryRun(args)
		if p != nil {
			// A malformed dryRun, and what else the arguments get wrong, as a dry run judges them.
			if _, err := svc.DryRun(ctx, mcpBase(ctx), args, typ, mcpClient(ctx)); err != nil {
				if q := backend.AsProblem(err); q.Status == http.StatusBadRequest {
					p.Body.Details = append(p.Body.Details, q.Body.Details...)
				}
			}
			return problemResult(name, p), nil
		}
		if dry {
			res, err := svc.DryRun(ctx, mcpBase(ctx), args, typ, mcpClient(ctx))
			if err != nil {
				return problemResult(name, backend.AsProblem(err)), nil
			}
			text := "Validación sin publicar (dryRun): los datos son válidos y no se guardó nada. " +
				"Para publicar de verdad, vuelva a llamar a " + name + " con los mismos datos y sin dryRun, solo si la persona lo autorizó."
			if res.Duplicate {
				text = fmt.Sprintf("Validación sin publicar (dryRun): los datos son válidos, pero ya hay un registro con este source y externalId (id %s, %s): "+
					"publicar no crearía otro y respondería con ese registro.", res.ID, res.PublicURL)
				switch {
				case res.Status == schema.StatusWithdrawn:
					text += " Quien lo publicó lo retiró, y un registro retirado no se vuelve a publicar; para publicar de nuevo use un externalId nuevo."
				case !*res.ContentMatches:
					text += " Los datos enviados difieren de los guardados y el cambio NO se aplicaría; para publicar otro registro use un externalId nuevo."
				}
			}
			out := mcp.NewToolResultStructured(res, text)
			out.Content = append(out.Content, mcp.NewTextContent(string(mustJSON(res))))
			return out, nil
		}
		res, created, err := svc.Publish(ctx, mcpBase(ctx), args, typ, mcpClient(ctx))
		if err != nil {
			p := backend.AsProblem(err)
			svc.Observe().Published(backend.ChannelMCP, start, nil, false, p)
			return problemResult(name, p), nil
		}
		svc.Observe().Published(backend.ChannelMCP, start, res, created, nil)
		return publishedResult(res, created, typ), nil
	}}
}

// takeDryRun removes the dryRun argument from a publishing tool's arguments (the publication's decoder
// refuses unknown fields) and reports its value. Arguments that are not a JSON object are left for the
// decoder to refuse with its usual message.
func takeDryRun(args []byte) ([]byte, bool, *backend.Problem) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, false, nil
	}
	raw, ok := m[schema.DryRunArg]
	if !ok {
		return args, false, nil
	}
	var dry bool
	bad := json.Unmarshal(raw, &dry) != nil
	delete(m, schema.DryRunArg)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false, backend.AsProblem(err)
	}
	if bad { // the other arguments still judged (out), so that every fault is told at once
		return out, false, backend.BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidBody, Error: "Datos inválidos: revise details.",
			Details: []schema.FieldError{{Field: "/" + schema.DryRunArg, Message: "«dryRun» debe ser un booleano (true o false)"}}})
	}
	return out, dry, nil
}

// What a result calls the record, in both grammatical genders Spanish needs.
var published = map[string]struct{ created, existed string }{
	schema.TypeRequest: {"La solicitud quedó publicada", "La solicitud ya estaba publicada"},
	schema.TypeOffer:   {"El ofrecimiento quedó publicado", "El ofrecimiento ya estaba publicado"},
}

func publishedResult(res *schema.PublishResult, created bool, typ string) *mcp.CallToolResult {
	var text string
	if created {
		text = fmt.Sprintf("%s (id %s, emergencia %s). Página pública: %s — compártala con la persona.",
			published[typ].created, res.ID, res.EmergencySlug, res.PublicURL)
		if res.ManageURL != "" {
			text += fmt.Sprintf("\nEntregue a la persona, solo a ella, su enlace para gestionar la publicación: %s — es la única forma de "+
				"marcarla como resuelta, renovarla o retirarla (y con ella su número). No lo publique ni lo comparta con nadie más.", res.ManageURL)
		}
	} else { // the stored record's type, which a retry through the other tool does not change
		text = fmt.Sprintf("%s con este source y externalId: no se creó un duplicado (id %s). Página pública: %s",
			published[res.Type].existed, res.ID, res.PublicURL)
		switch {
		case res.Status == schema.StatusWithdrawn:
			text += ". Atención: la persona que la publicó la retiró (su nombre y su número se borraron), y no se vuelve a publicar. " +
				"No la publique de nuevo por su cuenta: solo si la persona lo pide, con un externalId nuevo."
		case res.ContentMatches != nil && !*res.ContentMatches:
			text += ". Atención: los datos enviados difieren de los guardados y el cambio NO se aplicó; para publicar otro registro use un externalId nuevo."
		}
	}
	// The warnings (a place far from the emergency, …) in the text too: a model may read only the text.
	for _, w := range res.Warnings {
		if w.Code == schema.CodeManageTokenWithheld {
			text += ". " + w.Message // for the caller, not the person
			continue
		}
		text += "\nAviso para la persona: " + w.Message
	}
	out := mcp.NewToolResultStructured(res, text)
	// The JSON too, for clients that show the model only the text content (MCP asks for both).
	out.Content = append(out.Content, mcp.NewTextContent(string(mustJSON(res))))
	return out
}

// problemResult explains a refused publication so that the model can fix its call from the text alone:
// every field and what is wrong with it, then what to do (ask the person when only they can answer).
// toolErrorText is a refusal's message as a tool result says it: a tool result has no `details` member,
// its problems follow as a list below the message, so the message points there.
func toolErrorText(msg string) string {
	return toolErrorWords.Replace(msg)
}

// toolErrorWords point an MCP tool's error at the list of fields its text carries (a tool result has no
// details member).
var toolErrorWords = strings.NewReplacer("revise los campos indicados en details", "revise la lista de abajo",
	"revise details", "revise la lista de abajo")

func problemResult(tool string, p *backend.Problem) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "No se publicó. %s\n", toolErrorText(p.Body.Error))
	if len(p.Body.Details) > 0 {
		b.WriteString("Campos con problemas:\n")
		for _, d := range p.Body.Details {
			field := strings.TrimPrefix(d.Field, "/")
			if field == "" {
				field = "(argumentos)"
			}
			fmt.Fprintf(&b, "- %s: %s.\n", field, d.Message)
		}
		if p.Body.DetailsOmitted > 0 {
			fmt.Fprintf(&b, "- … y %d problemas más: corrija estos y vuelva a llamar para verlos.\n", p.Body.DetailsOmitted)
		}
	}
	retry := fmt.Sprintf("vuelva a llamar a %s con los mismos source y externalId", tool)
	b.WriteString("Qué hacer: ")
	switch p.Body.Code {
	case schema.CodeConsentRequired:
		b.WriteString("pregunte a la persona si acepta que su nombre y su número de WhatsApp se muestren públicamente. Solo si acepta, " + retry + " y publishContact: true (corrija también los demás campos indicados). Si no acepta, no se puede publicar.")
	case schema.CodeEmergencyRequired, schema.CodeUnknownEmergency:
		b.WriteString("llame a listar_emergencias, pregunte a la persona a cuál de las emergencias activas corresponde y " + retry + " y ese slug en emergencySlug.")
	case schema.CodeNoActiveEmergency:
		b.WriteString("no hay emergencias activas, así que ahora no se puede publicar; dígaselo a la persona y no reintente.")
	case schema.CodeInvalidBody, schema.CodeInvalidJSON:
		b.WriteString("corrija los campos indicados (pregunte a la persona lo que no sepa; no invente datos) y " + retry + ".")
		if slices.ContainsFunc(p.Body.Details, func(d schema.FieldError) bool { return d.Field == "/publishContact" }) {
			b.WriteString(" Falta también el consentimiento: publishContact: true solo si la persona acepta que su nombre y su número de WhatsApp se muestren públicamente.")
		}
	case schema.CodeUnknownPlace:
		b.WriteString("ese placeCode no es un lugar de la lista DIVIPOLA: pregunte a la persona el municipio o el centro poblado (o use las coordenadas que tenga), busque su código en " + schema.PlacesPath + " y " + retry + " y ese placeCode; no reintente el mismo código.")
	default:
		if p.Status >= 500 {
			fmt.Fprintf(&b, "es un error temporal del servicio: %s y exactamente los mismos datos; no se duplicará.", retry)
		} else { // a refusal of the data: the same call would be refused again
			b.WriteString("corrija lo indicado (pregunte a la persona lo que no sepa; no invente datos) y " + retry + "; no reintente los mismos datos.")
		}
	}
	return mcp.NewToolResultError(b.String())
}
