package site

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"slices"

	"github.com/directaid/directaid/schema"
)

// The service worker is served from the site's root so that its scope is the whole site. Browsers check
// it for changes on every navigation anyway; no-cache makes every proxy on the way ask too (the ETag
// keeps that cheap), so a deploy reaches phones at their next visit.
const (
	serviceWorkerPath  = "/sw.js"
	serviceWorkerCache = "no-cache"
)

// offlinePage is what the service worker answers for a page it does not keep, with no signal.
var offlinePage = page{tmpl: "sin-conexion.md"}

// embeddedHash is a hash of every file embedded in the site (templates, pages and assets).
func embeddedHash() (string, error) {
	sum := sha256.New()
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum.Write([]byte(p + "\x00"))
		sum.Write(b)
		return nil
	})
	return hex.EncodeToString(sum.Sum(nil)), err
}

// offlineURLs are the paths the service worker keeps at install, data-driven: the pages a person needs
// first (home, each active emergency's page, the forms) and the assets those pages use (stylesheet and
// scripts). The assets of onUse (the place list, the map's) are kept when a page first asks for them.
func (v *view) offlineURLs() []string {
	urls := []string{homePage.Path}
	for _, e := range v.ems {
		urls = append(urls, schema.EmergencyPath(e.Slug))
	}
	for _, p := range staticPages {
		if p.form != "" {
			urls = append(urls, p.Path)
		}
	}
	assets := make([]string, 0, len(v.h.assets))
	for p := range v.h.assets {
		if !v.h.onUse[p] {
			assets = append(assets, p)
		}
	}
	slices.Sort(assets)
	return append(urls, assets...)
}

// visitPrefixes start the paths of the pages the service worker keeps when a person opens them (a
// record's page, an emergency's filtered list or map), by their full URL, the last maxVisited of them.
var visitPrefixes = []string{schema.RecordPathPrefix, schema.EmergencyPathPrefix}

const maxVisited = 50

// savedNote is what a page served from the phone's copy says first; {hora} is when the copy was kept
// (HH:MM, and the day when it was not today).
const savedNote = "Sin señal al abrirla: esta es la copia de esta página guardada en este teléfono a las {hora}. Puede haber cambiado desde entonces."

// currentAssets name each asset's current URL by its name without the hash (site.css: /assets/site.1a2b3c4d5e.css),
// so that a page kept by an earlier version of the site finds today's stylesheet and scripts offline.
func (v *view) currentAssets() map[string]string {
	out := map[string]string{}
	for p, a := range v.h.assets {
		out[a.name] = p
	}
	return out
}

// serviceWorker is the script at serviceWorkerPath: its configuration, the outbox and assets/sw.js. Its
// version is a hash of the site's build and of that configuration, so the script changes (and browsers
// install it again, dropping the old cache) exactly when what it keeps may have changed.
func (v *view) serviceWorker() ([]byte, error) {
	rd, err := v.render(offlinePage)
	if err != nil {
		return nil, err
	}
	offline, err := v.h.htmlPage(rd.doc, offlinePage, v, nil)
	if err != nil {
		return nil, err
	}
	var forms []string // a form opened with a query (/pedir?emergencia=…) is the same form offline
	for _, p := range staticPages {
		if p.form != "" {
			forms = append(forms, p.Path)
		}
	}
	cfg := struct {
		Version string            `json:"version"`
		URLs    []string          `json:"urls"`
		Forms   []string          `json:"forms"`
		Visit   []string          `json:"visit"`
		Visited int               `json:"visited"`
		Assets  map[string]string `json:"assets"`
		Saved   string            `json:"saved"`
		Offline string            `json:"offline"`
	}{URLs: v.offlineURLs(), Forms: forms, Visit: visitPrefixes, Visited: maxVisited, Assets: v.currentAssets(), Saved: savedNote, Offline: string(offline)}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(v.h.build), b...))
	cfg.Version = hex.EncodeToString(sum[:8])
	if b, err = json.Marshal(cfg); err != nil {
		return nil, err
	}
	outbox, err := files.ReadFile("assets/outbox.js")
	if err != nil {
		return nil, err
	}
	sw, err := files.ReadFile("assets/sw.js")
	if err != nil {
		return nil, err
	}
	out := append([]byte("self.DIRECTAID = "), b...)
	out = append(out, ";\n"...)
	out = append(out, outbox...)
	return append(out, sw...), nil
}
