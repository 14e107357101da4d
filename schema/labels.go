package schema

import (
	"strconv"
	"strings"
)

// EnumLabels name the enumeration values for people, in Spanish: the site's pages, the Atom feed and the
// MCP tools' texts say them so.
var EnumLabels = map[string]string{
	"alimentos": "Alimentos", "salud": "Salud", "refugio": "Refugio", "transporte": "Transporte",
	"acopio": "Acopio", "rescate": "Rescate", "otro": "Otro",
	"urgent": "Urgente", "needed": "Necesaria", "stable": "Estable",
	"full": "Lleno", "needs_volunteers": "Necesita voluntarios", "needs_resources": "Necesita recursos",
	"gps": "GPS del teléfono", "exact": "Punto exacto",
	TypeRequest: "Solicitud", TypeOffer: "Ofrecimiento",
	// A record's status (the record page says «Estado de la publicación»).
	StatusOpen: "Vigente", StatusResolved: "Resuelta", StatusWithdrawn: "Retirada", StatusExpired: "Vencida",
	StatusHidden: "Oculta mientras se revisa",
}

// CategoryChoices name the categories where a person chooses one (the site's forms): what each holds, in
// the words of category's description, so that water is looked for under food and a truck under transport.
var CategoryChoices = map[string]string{
	"alimentos": "Alimentos y agua potable", "salud": "Salud: medicinas, atención médica", "refugio": "Refugio: albergue, techo, cobijas",
	"transporte": "Transporte: llevar personas o cosas", "acopio": "Acopio: centros de acopio y donaciones",
	"rescate": "Rescate: personas atrapadas o en peligro", "otro": "Otro",
}

// EnumLabel is the label of an enumeration value, or the value itself when it has none.
func EnumLabel(v string) string {
	if l, ok := EnumLabels[v]; ok {
		return l
	}
	return v
}

// CategoryPhrase is a category after a type's name: «de alimentos», «de otro tipo».
func CategoryPhrase(category string) string {
	if category == "otro" {
		return "de otro tipo"
	}
	return "de " + strings.ToLower(EnumLabel(category))
}

// PeopleWords is how many people: «1 persona», «5 personas»; "" for none (nothing to show).
func PeopleWords(n int) string {
	if n <= 0 { // 0 says nothing a person can act on: «0 personas» read as nobody needing it
		return ""
	}
	if n == 1 {
		return "1 persona"
	}
	return strconv.Itoa(n) + " personas"
}
