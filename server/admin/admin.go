// Package admin holds the admin page of `batchctl serve`: a single page in
// html and plain JavaScript that drives the HTTP API v1 from a browser.
//
// The page has no build step, loads nothing from a CDN and uses no web
// fonts, so that it works offline and on an air-gapped network: what is
// embedded here is exactly what the browser runs. The server serves
// index.html at GET / and the other files at GET /assets/{file}; the page
// refers to them by those paths.
package admin

import (
	"embed"
	"io/fs"
)

// Files holds the page under static/: static/index.html, its script as
// JavaScript modules (static/app.js, which imports core.js, import.js,
// grid.js and bulk.js by relative paths, so that they load from
// /assets/ too) and static/app.css. It is html and plain JavaScript, with
// no build step and no CDN. FS returns the same files without the
// directory prefix.
//
//go:embed static
var Files embed.FS

// FS returns the page's files at the root of a file system: index.html,
// the modules and app.css.
func FS() fs.FS {
	sub, err := fs.Sub(Files, "static")
	if err != nil {
		// fs.Sub fails only on an invalid path, and "static" is valid.
		panic(err)
	}
	return sub
}
