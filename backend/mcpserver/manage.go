package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

var (
	checkManage     = schema.ArgsValidator(&schema.ManageArgs{})
	checkReportArgs = schema.ArgsValidator(&schema.ReportArgs{})
	checkRespond    = schema.ArgsValidator(&schema.RespondArgs{})
	checkResponses  = schema.ArgsValidator(&schema.ResponsesArgs{})
	checkRespAction = schema.ArgsValidator(&schema.ResponseActionArgs{})
)

func manageTools(svc *backend.Service) []server.ServerTool {
	manage := mcp.NewToolWithRawSchema(schema.ToolManage,
		"Gestiona una publicación con el código (manageToken) que se recibió al publicarla: resolve la marca como resuelta (ya no se necesita o ya no está disponible), "+
			"reopen la vuelve a abrir, renew la renueva por otro plazo antes o después de vencer, y withdraw la retira: el nombre, el teléfono y la dirección exacta se borran y no se pueden recuperar. "+
			"Antes de withdraw, confirme con la persona. Repetir una acción no cambia nada (changed: false). Sin el código correcto no se puede gestionar.",
		mustJSON(schema.ReflectArgs(&schema.ManageArgs{})))
	manage.RawOutputSchema = mustJSON(schema.JSONSchema("ActionResult"))
	annotate(&manage, "Gestionar una publicación propia", false)
	yes := true
	manage.Annotations.DestructiveHint = &yes // withdraw erases the contact

	report := mcp.NewToolWithRawSchema(schema.ToolReport,
		"Reporta una publicación para que se revise: spam, fraud (fraude, p. ej. piden dinero), not_my_number (el número es de la persona y no dio permiso: el teléfono se oculta de inmediato), "+
			"offensive, duplicate, already_resolved u other, con una nota opcional sin datos personales. Varias personas distintas que reportan ocultan la publicación hasta que se revise.",
		mustJSON(schema.ReflectArgs(&schema.ReportArgs{})))
	report.RawOutputSchema = mustJSON(schema.JSONSchema("ReportResult"))
	annotate(&report, "Reportar una publicación", false)

	respond := mcp.NewToolWithRawSchema(schema.ToolRespond,
		"Responde «yo puedo ayudar» a una publicación abierta (a una solicitud: puedo ayudarle; a un ofrecimiento: me interesa) con un mensaje de hasta 300 caracteres "+
			"y, si la persona quiere, su nombre y su WhatsApp: solo los ve quien publicó, con su código para gestionar; el público ve únicamente cuántas personas responden. "+
			"La respuesta cuenta 48 horas. Devuelve un responseId y un responseToken para renovarla o retirarla con "+schema.ToolResponseAction+": entrégueselos a la persona. "+
			"Si no recibió la respuesta de la herramienta, reintente con los mismos datos: en 10 minutos devuelve la misma respuesta (duplicate), sin crear otra. "+
			"Pregunte a la persona antes de enviar su número.",
		mustJSON(schema.ReflectArgs(&schema.RespondArgs{})))
	respond.RawOutputSchema = mustJSON(schema.JSONSchema("ResponseCreated"))
	annotate(&respond, "Responder «yo puedo ayudar»", false)
	no := false
	respond.Annotations.IdempotentHint = &no // each call is one more response, with its own token

	responses := mcp.NewToolWithRawSchema(schema.ToolResponses,
		"Muestra a quien publicó las respuestas «yo puedo ayudar» que recibió su publicación, con el código para gestionar (manageToken) que recibió al publicarla: "+
			"el mensaje de cada persona, su nombre y su WhatsApp (con el enlace wa.me) si los dio, cuándo respondió y si su respuesta sigue activa; active dice cuántas cuentan. "+
			"Solo para la persona que publicó: no comparta estos números con nadie más.",
		mustJSON(schema.ReflectArgs(&schema.ResponsesArgs{})))
	responses.RawOutputSchema = mustJSON(schema.JSONSchema("ResponseList"))
	annotate(&responses, "Ver las respuestas a una publicación propia", true)

	responseAction := mcp.NewToolWithRawSchema(schema.ToolResponseAction,
		"Renueva (renew: cuenta otras 48 horas) o retira (withdraw: el mensaje, el nombre y el teléfono se borran) una respuesta «yo puedo ayudar», "+
			"con el responseId y el responseToken que se recibieron al responder. Repetir una acción no cambia nada (changed: false).",
		mustJSON(schema.ReflectArgs(&schema.ResponseActionArgs{})))
	responseAction.RawOutputSchema = mustJSON(schema.JSONSchema("ResponseActionResult"))
	annotate(&responseAction, "Renovar o retirar una respuesta propia", false)
	responseAction.Annotations.DestructiveHint = &yes // withdraw erases the responder's contact

	return []server.ServerTool{
		{Tool: respond, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.RespondArgs
			if res := decodeArgs(schema.ToolRespond, req, &a, checkRespond); res != nil {
				return res, nil
			}
			in, e164, p := backend.NormalizeResponse(&a.ResponseInput)
			if p != nil {
				return readProblem(schema.ToolRespond, p), nil
			}
			res, err := svc.Respond(ctx, strings.TrimSpace(a.ID), in, e164, mcpClient(ctx))
			if err != nil {
				return readProblem(schema.ToolRespond, err), nil
			}
			return structuredResult(res, res.Message+" responseToken: "+res.ResponseToken), nil
		}},
		{Tool: manage, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.ManageArgs
			if res := decodeArgs(schema.ToolManage, req, &a, checkManage); res != nil {
				return res, nil
			}
			res, err := svc.Act(ctx, mcpBase(ctx), a.ID, a.ManageToken, a.Action)
			if err != nil {
				return readProblem(schema.ToolManage, err), nil
			}
			text := fmt.Sprintf("Hecho: la publicación %s quedó %s. Página: %s", res.ID, backend.StatusWords[res.Status], res.PublicURL)
			if !res.Changed {
				text = fmt.Sprintf("La publicación %s ya estaba %s: no cambió nada. Página: %s", res.ID, backend.StatusWords[res.Status], res.PublicURL)
			}
			return structuredResult(res, text), nil
		}},
		{Tool: responses, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.ResponsesArgs
			if res := decodeArgs(schema.ToolResponses, req, &a, checkResponses); res != nil {
				return res, nil
			}
			res, err := svc.ResponsesFor(ctx, strings.TrimSpace(a.ID), strings.TrimSpace(a.ManageToken))
			if err != nil {
				return readProblem(schema.ToolResponses, err), nil
			}
			return structuredResult(res, responsesText(res)), nil
		}},
		{Tool: responseAction, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.ResponseActionArgs
			if res := decodeArgs(schema.ToolResponseAction, req, &a, checkRespAction); res != nil {
				return res, nil
			}
			res, err := svc.ActOnResponseWith(ctx, strings.TrimSpace(a.ID), strings.TrimSpace(a.ResponseID), strings.TrimSpace(a.ResponseToken),
				strings.TrimSpace(a.Action), mcpClient(ctx))
			if err != nil {
				return readProblem(schema.ToolResponseAction, err), nil
			}
			text := fmt.Sprintf("Hecho: la respuesta %s quedó %s.", res.ResponseID, res.Status)
			if !res.Changed {
				text = fmt.Sprintf("La respuesta %s ya estaba %s: no cambió nada.", res.ResponseID, res.Status)
			}
			return structuredResult(res, text), nil
		}},
		{Tool: report, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a schema.ReportArgs
			if res := decodeArgs(schema.ToolReport, req, &a, checkReportArgs); res != nil {
				return res, nil
			}
			res, err := svc.Report(ctx, strings.TrimSpace(a.ID), &a.ReportInput, mcpClient(ctx))
			if err != nil {
				return readProblem(schema.ToolReport, err), nil
			}
			return structuredResult(res, res.Message), nil
		}},
	}
}

// responsesText is the human summary of ver_respuestas: how many count, then each response.
func responsesText(l *schema.ResponseList) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d respuestas, %d activas.", len(l.Items), l.Active)
	for _, it := range l.Items {
		fmt.Fprintf(&b, "\n- %s (%s)", it.Message, it.Status)
		if it.ContactName != "" {
			fmt.Fprintf(&b, " · %s", it.ContactName)
		}
		if it.WhatsappURL != "" {
			fmt.Fprintf(&b, " · %s", it.WhatsappURL)
		}
	}
	return b.String()
}
