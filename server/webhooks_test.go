package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// privateDestinations are webhook URLs whose host is loopback, private,
// link-local, unspecified or otherwise not a public address, in the
// spellings that reach one.
var privateDestinations = []string{
	"http://127.0.0.1:8080/hook",
	"http://127.0.0.2/",
	"http://10.1.2.3/hook",
	"http://172.16.0.1/",
	"http://192.168.1.1/",
	"http://169.254.169.254/latest/meta-data/",
	"http://100.64.0.1/",
	"http://0.0.0.0:22/",
	"http://224.0.0.1/",
	"http://255.255.255.255/",
	"http://[::1]:9000/",
	"http://[::]/",
	"http://[fe80::1]/",
	"http://[fe80::1%25eth0]/",
	"http://[fc00::1]/",
	"http://[::ffff:127.0.0.1]/",
	"http://[::ffff:a00:1]/",
	"http://[64:ff9b::a00:1]/",
	"http://localhost:8080/",
	"http://LOCALHOST./",
	"http://api.localhost/",
	"http://2130706433/",
	"http://0x7f000001/",
	"http://0x7f.1/",
	"http://127.1/",
	"http://017700000001/",
}

// TestAPIWebhookDestinations: an endpoint at a loopback, private,
// link-local or unspecified address is refused with
// destination_not_allowed, and nothing is stored; public destinations
// are accepted; with AllowPrivateWebhooks private ones are too.
func TestAPIWebhookDestinations(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	for _, u := range privateDestinations {
		a := h.postJSON("/v1/webhooks", adminA, map[string]string{"url": u})
		if a.status != http.StatusBadRequest || a.problem(t).Code != "destination_not_allowed" {
			t.Errorf("%s: %s", u, a)
		}
	}
	if l := h.get("/v1/webhooks", adminA); l.status != http.StatusOK || strings.Contains(string(l.body), "http") {
		t.Errorf("refused endpoints were stored: %s", l)
	}
	for _, u := range []string{"https://hooks.example.com/rowfate", "http://93.184.216.34/hook", "https://[2606:4700::1111]/hook"} {
		if a := h.postJSON("/v1/webhooks", adminA, map[string]string{"url": u}); a.status != http.StatusCreated {
			t.Errorf("%s: %s", u, a)
		}
	}
	allowed := sqliteAPI(t, apiOptions{allowPrivateWebhooks: true})
	for _, u := range privateDestinations {
		if a := allowed.postJSON("/v1/webhooks", adminA, map[string]string{"url": u}); a.status != http.StatusCreated {
			t.Errorf("allowed, %s: %s", u, a)
		}
	}
	if a := allowed.postJSON("/v1/webhooks", adminA, map[string]string{"url": "ftp://127.0.0.1/"}); a.status != http.StatusBadRequest || a.problem(t).Code != "bad_request" {
		t.Errorf("allowed, an ftp URL: %s", a)
	}
}
