package caddymodule

import (
	"errors"
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
)

// statusPage is the operator's page for those without Grafana: the same key figures as /metrics, read-only,
// server-rendered, with no script and no external asset.
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"mul": func(a, b int) int { return a * b },
}).Parse(`<!doctype html>
<html lang="es-CO"><head><meta charset="utf-8"><title>directaid: estado</title>
<style>body{font-family:sans-serif;margin:1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}</style>
</head><body>
<h1>Estado de directaid</h1>
{{if .InstanceShared}}<p><strong>Otro nodo en marcha tiene el mismo instance id de Caddy que este</strong>: los límites compartidos se cuentan en cada nodo por separado. Dé a cada nodo su propio directorio de datos (XDG_DATA_HOME) y borre instance.uuid de las imágenes copiadas (docs/postgres.md).</p>{{end}}
<h2>Publicaciones por minuto (última hora)</h2>
<p>Total en la hora: {{.Total}} (creadas {{.Created}}, duplicadas {{.Duplicate}}, rechazadas {{.Refused}}). Son las de este nodo desde que arrancó; con varios nodos, cada uno cuenta las suyas. Cada barra es un minuto: en verde las creadas, encima en rojo las rechazadas (los reintentos de registros ya guardados no cuentan).</p>
<svg width="{{mul (len .Minutes) 10}}" height="{{.Height}}" role="img" aria-label="Publicaciones creadas y rechazadas por minuto">
{{- range $i, $m := .Minutes}}
<g class="minuto"><title>{{$m.Start}}: creadas {{$m.Created}}, rechazadas {{$m.Refused}}</title><rect x="{{mul $i 10}}" y="{{$m.Y}}" width="8" height="{{$m.H}}" fill="#2a6"></rect>{{if $m.RH}}<rect x="{{mul $i 10}}" y="{{$m.RY}}" width="8" height="{{$m.RH}}" fill="#c33"></rect>{{end}}</g>
{{- end}}
</svg>
<h2>Rechazos por código</h2>
<table><tr><th>Código</th><th>Cantidad</th></tr>
{{- range .Refusals}}<tr><td>{{.Code}}</td><td>{{.N}}</td></tr>{{else}}<tr><td colspan="2">Ninguno</td></tr>{{end}}</table>
<h2>Registros por estado</h2>
{{if .StoreError}}<p><strong>La base de datos no responde</strong>: {{.StoreError}}</p>{{else}}<table><tr><th>Emergencia</th><th>Solicitudes abiertas</th><th>Ofrecimientos abiertos</th>{{range .Statuses}}<th>{{.}}</th>{{end}}<th>Ocultamiento automático por reportes</th></tr>
{{- range .Records}}<tr><td>{{.Emergency}}</td><td>{{index .Open "request"}}</td><td>{{index .Open "offer"}}</td>
{{- $f := .}}{{range $.Statuses}}<td>{{index $f.Statuses .}}</td>{{end}}
<td>{{if or .PhonesPaused .RecordsPaused}}<strong>en pausa</strong>:{{if .PhonesPaused}} teléfonos{{end}}{{if .RecordsPaused}} publicaciones{{end}} (demasiados en la última hora; los reportes esperan en la cola){{else}}activo{{end}}</td></tr>{{end}}</table>{{end}}
<h2>Disco</h2>
{{- if .Disk}}<table><tr><th>Parte</th><th>Bytes</th></tr>
{{- range .Disk}}<tr><td>{{.Code}}</td><td>{{.N}}</td></tr>{{end}}
{{if ge .Free 0}}<tr><td>libre</td><td>{{.Free}}</td></tr>{{end}}</table>{{else}}<p>Esta base de datos no informa su disco.</p>{{end}}
</body></html>
`))

type statusCount struct {
	Code string
	N    int64
}

// statusBar is one minute of the chart: its created publications (Y, H) and, above them, its refused
// ones (RY, RH).
type statusBar struct {
	Start            string
	Created, Refused int
	Y, H, RY, RH     int
}

func statusHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	app, err := currentApp()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	const height = 100
	data := struct {
		Minutes                            []statusBar
		Height                             int
		Total, Created, Duplicate, Refused int
		Refusals, Disk                     []statusCount
		Records                            []backend.EmergencyFigures
		Statuses                           []string
		Free                               int64
		StoreError                         string
		InstanceShared                     bool
	}{Height: height, Statuses: store.Statuses, InstanceShared: instanceShared.Load()}
	mins := series.PublicationsPerMinute(time.Now(), 60)
	top := 1
	for _, m := range mins {
		top = max(top, m.Created+m.Refused)
		data.Created, data.Duplicate, data.Refused = data.Created+m.Created, data.Duplicate+m.Duplicate, data.Refused+m.Refused
	}
	data.Total = data.Created + data.Duplicate + data.Refused
	for _, m := range mins {
		h, rh := m.Created*height/top, m.Refused*height/top
		data.Minutes = append(data.Minutes, statusBar{Start: m.Start.Format("15:04 UTC"), Created: m.Created, Refused: m.Refused,
			Y: height - h, H: h, RY: height - h - rh, RH: rh})
	}
	byCode := map[string]int64{}
	for k, v := range series.Publications() {
		if k[1] == backend.OutcomeRefused {
			byCode[k[2]] += int64(v)
		}
	}
	data.Refusals = sortedCounts(byCode)
	// A database that cannot answer leaves the page's other figures, which say what the outage does.
	if data.Records, err = app.svc.EmergencyFigures(r.Context()); err != nil {
		data.StoreError = err.Error()
	}
	if du := app.diskUser(); du != nil {
		if parts, free, err := du.DiskUsage(); err == nil {
			data.Disk, data.Free = sortedCounts(parts), free
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	return statusPage.Execute(w, data)
}

func sortedCounts[N int64 | float64](m map[string]N) []statusCount {
	out := make([]statusCount, 0, len(m))
	for k, v := range m {
		out = append(out, statusCount{Code: k, N: int64(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
