package schema

// The names of the MCP tools, which the tools, the rate limits and the documents share.
const (
	ToolListEmergencies = "listar_emergencias"
	ToolPublishRequest  = "publicar_solicitud"
	ToolPublishOffer    = "publicar_ofrecimiento"
	// ToolFindPlace turns a place's name into its DIVIPOLA code (placeCode, the municipio filter).
	ToolFindPlace = "buscar_lugar"
)

// The MCP read tools: the same filters, validation and answers as GET help?view=list|detail|panorama
// and GET help/{id}/matches.
const (
	ToolSearchHelp = "buscar_ayudas"
	ToolViewHelp   = "ver_ayuda"
	ToolPanorama   = "consultar_panorama"
	ToolMatches    = "buscar_coincidencias"
)

// The MCP tools of a record's life: the publisher's actions (as POST help/{id}/actions) and community
// reports (as POST help/{id}/reports), through the same Service code.
const (
	ToolManage = "actualizar_publicacion"
	ToolReport = "reportar_publicacion"
	// ToolRespond answers "yo puedo ayudar" (as POST help/{id}/responses).
	ToolRespond = "responder_solicitud"
	// ToolResponses lists a record's responses to its publisher (as GET help/{id}/responses).
	ToolResponses = "ver_respuestas"
	// ToolResponseAction renews or withdraws a response (as POST help/{id}/responses/{rid}/actions).
	ToolResponseAction = "actualizar_respuesta"
)
