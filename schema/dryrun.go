package schema

import "github.com/invopop/jsonschema"

// DryRunResult is the answer to a publication validated with dryRun=true (POST help?dryRun=true, the
// dryRun argument of the MCP publishing tools): it passed every rule a publication must pass, and this
// is what would be stored. Nothing was stored. When its (source, externalId) is already stored, it
// says so as the real call would (duplicate, contentMatches, and the stored record's id).
type DryRunResult struct {
	OK     bool `json:"ok" jsonschema_description:"Siempre true: la publicación es válida."`
	DryRun bool `json:"dryRun" jsonschema_description:"Siempre true: no se guardó nada; envíe lo mismo sin dryRun para publicar."`
	// Duplicate, ContentMatches, ID, Status and PublicURL are the real call's, for a pair already stored.
	Duplicate      bool   `json:"duplicate" jsonschema_description:"true si el par (source, externalId) ya existe: la publicación real no crearía nada y respondería 200 con el registro existente (id)."`
	ContentMatches *bool  `json:"contentMatches,omitempty" jsonschema_description:"Solo con duplicate true: false si el contenido enviado difiere del guardado (la publicación real NO aplicaría el cambio ni daría el manageToken)."`
	ID             string `json:"id,omitempty" jsonschema_description:"Solo con duplicate true: el id del registro existente."`
	Status         string `json:"status,omitempty" enum:"statuses" jsonschema_description:"Solo con duplicate true: el estado del registro existente (withdrawn: nunca se vuelve a publicar)."`
	PublicURL      string `json:"publicUrl,omitempty" jsonschema:"format=uri" jsonschema_description:"Solo con duplicate true: la página pública del registro existente."`
	// The record as it would be stored: strings trimmed, defaults applied, the emergency chosen, the
	// phone parsed to E.164 (contactE164).
	Warnings []Warning   `json:"warnings,omitempty" jsonschema_description:"Los avisos que daría la publicación real (ver PublishResult.warnings)."`
	Record   Publication `json:"record" jsonschema_description:"El registro tal como se guardaría: textos recortados, valores por defecto aplicados, emergencia elegida y teléfono en formato E.164 (contactE164). Con duplicate true no se guardaría: queda el existente."`
}

// DryRunDescription documents the dryRun switch wherever it appears.
const DryRunDescription = "true para solo validar: responde 200 con lo que se guardaría (o el mismo error que una publicación) y no guarda nada; si el par (source, externalId) ya existe lo dice (duplicate, contentMatches, id), como la publicación real. Úselo para probar una integración sin publicar en una emergencia real."

func init() { wireTypes["DryRunResult"] = &DryRunResult{} }

// storedPrecision describes the locationPrecision of a dry run's record as it would be stored: a publisher
// sends gps or exact with coordinates, and a record placed by its placeCode alone gets place.
func storedPrecision(s *jsonschema.Schema) {
	rec, ok := s.Properties.Get("record")
	if !ok || rec.Properties == nil {
		return
	}
	if p, ok := rec.Properties.Get("locationPrecision"); ok {
		p.Enum = []any{PrecisionPlace, PrecisionGPS, PrecisionExact}
		p.Description = "De dónde sale el punto: place (el punto del lugar de placeCode, aproximado: no se enviaron coordenadas), gps (el GPS del teléfono) o exact (un punto conocido; por defecto con coordenadas)."
	}
}

// DryRunArg names the switch: the query parameter of POST help and the argument of the MCP tools.
const DryRunArg = "dryRun"
