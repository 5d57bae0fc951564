package server

import (
	"net/http"
	"path"

	"github.com/rowfate/rowfate/server/admin"
)

// pageCSP is the admin page's content security policy: its own scripts,
// styles and API only, nothing inline, no frames; the page loads nothing
// from elsewhere, so that it works offline and an injected cell cannot
// run or phone home.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// The files change with the binary; revalidating is cheap (they are
	// small) and a new build is seen at once.
	h.Set("Cache-Control", "no-cache")
}

// adminIndex serves the admin page.
func (s *Server) adminIndex(w http.ResponseWriter, r *http.Request, _ Principal) error {
	pageHeaders(w)
	http.ServeFileFS(w, r, admin.FS(), "index.html")
	return nil
}

// adminAsset serves the page's script and style sheet.
func (s *Server) adminAsset(w http.ResponseWriter, r *http.Request, _ Principal) error {
	name := path.Clean(r.PathValue("file"))
	if name == "index.html" || name == "." || name == ".." {
		return problemf(http.StatusNotFound, "not_found", "no asset %q", r.PathValue("file"))
	}
	f, err := admin.FS().Open(name)
	if err != nil {
		return problemf(http.StatusNotFound, "not_found", "no asset %q", r.PathValue("file"))
	}
	f.Close()
	pageHeaders(w)
	http.ServeFileFS(w, r, admin.FS(), name)
	return nil
}
