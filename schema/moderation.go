package schema

import (
	"strings"

	"github.com/invopop/jsonschema"
)

// Community reports (POST /api/public/v1/help/{id}/reports and the MCP tool reportar_publicacion).

// ReportReasons are the reasons of a report. not_my_number hides the record's phone at once.
var ReportReasons = []string{"spam", "fraud", "not_my_number", "offensive", "duplicate", "already_resolved", "other"}

// MaxReportNoteRunes bounds a report's note.
const MaxReportNoteRunes = 300

// ReportsSuffix ends the path of a record's reports: HelpPath + "/{id}" + ReportsSuffix.
const ReportsSuffix = "/reports"

// ReportFormPath is the site's no-JavaScript report form; it shares the API's report rate limit.
const ReportFormPath = "/reportar"

// ReportsPath is the path of the reports of record id.
func ReportsPath(id string) string { return HelpPath + "/" + id + ReportsSuffix }

// ReportsPathID returns the id of a reports path (any string between the slashes: the caller checks it).
func ReportsPathID(path string) (string, bool) { return recordSubpathID(path, ReportsSuffix) }

// recordSubpathID returns the id of a path HelpPath + "/{id}" + suffix (any string without a slash).
func recordSubpathID(path, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, HelpPath+"/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, suffix)
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// ReportInput is the body of a report.
type ReportInput struct {
	Reason string `json:"reason" jsonschema_description:"Motivo: spam, fraud (fraude, p. ej. piden dinero), not_my_number (el número es mío y no quiero que se muestre, p. ej. lo publicó otra persona: se oculta de inmediato), offensive, duplicate, already_resolved (ya se resolvió) u other."`
	Note   string `json:"note,omitempty" jsonschema:"maxLength=300" jsonschema_description:"Nota opcional para quien modera (máximo 300 caracteres). No escriba datos personales."`
}

// ReportArgs is the input of the MCP tool reportar_publicacion.
type ReportArgs struct {
	ID string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro (16 caracteres)."`
	ReportInput
}

// ReportResult is the answer to a report (202).
type ReportResult struct {
	OK     bool   `json:"ok"`
	ID     string `json:"id" jsonschema_description:"Id del registro reportado."`
	Reason string `json:"reason"`
	// Outcome is what the report did by itself (ReportOutcomes).
	Outcome string `json:"outcome" jsonschema_description:"Lo que hizo el reporte por sí solo. hid_phone: el teléfono dejó de mostrarse. hid_record: la publicación dejó de mostrarse (varias personas la reportaron). queued: habría ocultado algo, pero los límites contra el abuso (cada dirección oculta pocos teléfonos por hora; una emergencia con muchos ocultamientos recientes pausa los automáticos) lo dejaron en la cola de moderación. counted: quedó registrado para la moderación, sin efecto inmediato."`
	Message string `json:"message" jsonschema_description:"Qué pasa ahora, en español."`
}

// The outcomes of a report (ReportResult.Outcome).
const (
	ReportHidPhone  = "hid_phone"
	ReportHidRecord = "hid_record"
	ReportQueued    = "queued"
	ReportCounted   = "counted"
)

// ReportOutcomes lists every outcome of a report.
var ReportOutcomes = []string{ReportHidPhone, ReportHidRecord, ReportQueued, ReportCounted}

// JSONSchemaExtend makes ok the constant true and outcome one of ReportOutcomes.
func (ReportResult) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("outcome"); ok {
		for _, o := range ReportOutcomes {
			p.Enum = append(p.Enum, o)
		}
	}
	if p, ok := s.Properties.Get("ok"); ok {
		p.Const = true
	}
}

func init() {
	sharedEnums["reason"] = ReportReasons
	wireTypes["ReportInput"] = &ReportInput{}
	wireTypes["ReportResult"] = &ReportResult{}
}

// reportsPathItem is the OpenAPI path item of a record's reports.
func reportsPathItem() map[string]any {
	return map[string]any{
		"post": withIDParam(map[string]any{
			"operationId": "reportHelp", "tags": []string{"api"},
			"summary":     "Reportar un registro (spam, fraude, número ajeno…)",
			"description": "Cualquiera puede reportar un registro. Quien reporta se distingue por un hash con clave de su dirección IP (no se guarda la IP); reportar dos veces cuenta una. Con " + "not_my_number" + " el teléfono deja de mostrarse de inmediato (el registro sigue listado sin él). Cuando varias personas distintas lo reportan (3 por omisión, hide_after_reports), el registro queda oculto (hidden) hasta que quien opera el servicio lo revise. Límite por IP como el de publicar.",
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref("ReportInput"))},
			"responses": map[string]any{
				"202": map[string]any{"description": "Reporte registrado.", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ReportResult"))},
				"400": errResp("Datos inválidos (invalid_body con details por campo, invalid_json; invalid_parameter, con details en /path/id, si el id no tiene la forma de un id)."),
				"404": errResp("No existe ese registro (not_found)."),
				"410": errResp("El registro fue retirado o ya está oculto (gone)."),
				"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
				"415": errResp(unsupportedMediaWords),
				"429": errResp("Límite temporal de reportes alcanzado (rate_limited). Reintente tras Retry-After segundos.", "Retry-After"),
				"503": errResp("Servicio no disponible (unavailable). Reintente tras Retry-After segundos.", "Retry-After"),
			},
		}),
		"options": withIDParam(preflight("preflightReports")),
	}
}

// withIDParam declares the {id} of a templated path on op (every operation of such a path must), with
// the schema of the query's id (HelpQuery): the same 16-character pattern the server requires.
func withIDParam(op map[string]any) map[string]any {
	id, _ := reflectSchema(&HelpQuery{}).Properties.Get("id")
	op["parameters"] = []any{map[string]any{"name": "id", "in": "path", "required": true, "description": "Id del registro (16 caracteres; no distingue mayúsculas).",
		"schema": map[string]any{"type": "string", "pattern": id.Pattern}}}
	return op
}
