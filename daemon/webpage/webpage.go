// Package webpage is the phone's page of the web listener: static files
// embedded in the binary (no third-party loads), served under the
// listener's Content-Security-Policy, which allows nothing but them.
package webpage

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves the page: / is index.html, the rest by name.
func Handler() http.Handler {
	sub, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "the page is read only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
