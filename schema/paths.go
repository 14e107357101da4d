package schema

import "net/url"

// Paths of the public API and of the site's pages that the API, the MCP server and the site all name.
const (
	HelpPath    = "/api/public/v1/help"
	OpenAPIPath = "/api/public/openapi.json"
	MCPPath     = "/mcp"
	// RecordPathPrefix starts the path of every record's page (the only page with its phone number).
	RecordPathPrefix = "/ayudas/"
	// EmergencyPathPrefix starts the path of every emergency's page.
	EmergencyPathPrefix = "/emergencias/"
	// PlacesPath is DANE's list of municipios and centros poblados, the codes of placeCode.
	PlacesPath = "/lugares.tsv"
	// PlaceSearchPath searches that list by name (what the MCP tool buscar_lugar does).
	PlaceSearchPath = "/api/public/v1/places"
)

// RecordPath is the path of a record's page.
func RecordPath(id string) string { return RecordPathPrefix + url.PathEscape(id) }

// EmergencyPath is the path of an emergency's page.
func EmergencyPath(slug string) string { return EmergencyPathPrefix + url.PathEscape(slug) }

// EmergencyLinks are the links of an emergency under base (the public base URL): its page, the page's
// Markdown twin, and where to publish.
func EmergencyLinks(base, slug string) Links {
	page := base + EmergencyPath(slug)
	return Links{Page: page, Markdown: page + ".md", Publish: base + HelpPath}
}

// EventsPath is the live feed of changes (Server-Sent Events) with the list's filters.
const EventsPath = HelpPath + "/events"
