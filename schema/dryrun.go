package schema

// DryRunResult is the answer to a publication validated with dryRun=true (POST help?dryRun=true, the
// dryRun argument of the MCP publishing tools): it passed every rule a publication must pass, and this
// is what would be stored. Nothing was stored.
type DryRunResult struct {
	OK     bool `json:"ok" jsonschema_description:"Siempre true: la publicación es válida."`
	DryRun bool `json:"dryRun" jsonschema_description:"Siempre true: no se guardó nada; envíe lo mismo sin dryRun para publicar."`
	// The record as it would be stored: strings trimmed, defaults applied, the emergency chosen, the
	// phone parsed to E.164 (contactE164).
	Record Publication `json:"record" jsonschema_description:"El registro tal como se guardaría: textos recortados, valores por defecto aplicados, emergencia elegida y teléfono en formato E.164 (contactE164)."`
}

// DryRunDescription documents the dryRun switch wherever it appears.
const DryRunDescription = "true para solo validar: responde 200 con lo que se guardaría (o el mismo error que una publicación) y no guarda nada. Úselo para probar una integración sin publicar en una emergencia real."

func init() { wireTypes["DryRunResult"] = &DryRunResult{} }

// DryRunArg names the switch: the query parameter of POST help and the argument of the MCP tools.
const DryRunArg = "dryRun"
