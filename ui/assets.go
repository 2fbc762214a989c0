package ui

import (
	"embed"
	"net/http"
	"path"
)

// The page's bundle, made from web/ by the generator (esbuild's Go API,
// with the npm packages web/package-lock.json pins) and committed, so a
// plain go build needs neither npm nor the network.
//
//go:generate go run ./internal/bundle
//go:embed assets/app.js assets/app.css
var assets embed.FS

var assetTypes = map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	b, err := assets.ReadFile("assets/" + path.Clean(name))
	if err != nil || assetTypes[path.Ext(name)] == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", assetTypes[path.Ext(name)])
	_, _ = w.Write(b) // the client went away
}
