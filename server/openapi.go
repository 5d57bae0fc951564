package server

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3 document of the API, served at
// GET /v1/openapi.json. It is written by hand; the tests check it against
// Routes (every route documented, nothing documented that is not routed)
// and every answer of the API tests against its schemas.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ Principal) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(OpenAPI)
	return nil
}
