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
			"La respuesta cuenta 48 horas. Devuelve un responseToken para renovarla o retirarla (POST …/responses/{responseId}/actions): entrégueselo a la persona. "+
			"Si no recibió la respuesta de la herramienta, reintente con los mismos datos: en 10 minutos devuelve la misma respuesta (duplicate), sin crear otra. "+
			"Pregunte a la persona antes de enviar su número.",
		mustJSON(schema.ReflectArgs(&schema.RespondArgs{})))
	respond.RawOutputSchema = mustJSON(schema.JSONSchema("ResponseCreated"))
	annotate(&respond, "Responder «yo puedo ayudar»", false)
	no := false
	respond.Annotations.IdempotentHint = &no // each call is one more response, with its own token

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
