package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rowfate/rowfate/webhook"
)

// The example of the Standard Webhooks specification.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignSpecExample(t *testing.T) {
	got, err := webhook.Sign(specSecret, specID, time.Unix(specTS, 0), []byte(specBody))
	if err != nil || got != specSig {
		t.Fatalf("Sign = %q, %v; want %q", got, err, specSig)
	}
}

func headers(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set(webhook.HeaderID, id)
	}
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

func TestVerify(t *testing.T) {
	at := func(sec int64) *webhook.Options {
		return &webhook.Options{Now: func() time.Time { return time.Unix(sec, 0) }}
	}
	other := "whsec_" + "c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24="
	for _, tc := range []struct {
		name    string
		h       http.Header
		body    string
		secrets []string
		opts    *webhook.Options
		want    error
	}{
		{"valid", headers(specID, specTS, specSig), specBody, []string{specSecret}, at(specTS), nil},
		{"rotated: the old secret still listed", headers(specID, specTS, specSig), specBody, []string{other, specSecret}, at(specTS), nil},
		{"several signatures, one matches", headers(specID, specTS, "v1,AAAA "+specSig), specBody, []string{specSecret}, at(specTS), nil},
		{"body changed by one byte", headers(specID, specTS, specSig), `{"test": 2432232315}`, []string{specSecret}, at(specTS), webhook.ErrSignature},
		{"id changed", headers("msg_other", specTS, specSig), specBody, []string{specSecret}, at(specTS), webhook.ErrSignature},
		{"wrong secret only", headers(specID, specTS, specSig), specBody, []string{other}, at(specTS), webhook.ErrSignature},
		{"not v1", headers(specID, specTS, "v1a,"+specSig[3:]), specBody, []string{specSecret}, at(specTS), webhook.ErrSignature},
		{"five minutes late is fine", headers(specID, specTS, specSig), specBody, []string{specSecret}, at(specTS + 300), nil},
		{"too old", headers(specID, specTS, specSig), specBody, []string{specSecret}, at(specTS + 301), webhook.ErrTimestamp},
		{"from the future", headers(specID, specTS, specSig), specBody, []string{specSecret}, at(specTS - 301), webhook.ErrTimestamp},
		{"no id", headers("", specTS, specSig), specBody, []string{specSecret}, at(specTS), webhook.ErrMissingHeader},
		{"bad secret", headers(specID, specTS, specSig), specBody, []string{"whsec_!!"}, at(specTS), webhook.ErrSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := webhook.Verify(tc.h, []byte(tc.body), tc.secrets, tc.opts)
			if !errors.Is(err, tc.want) || (err == nil && id != specID) {
				t.Fatalf("Verify = %q, %v; want %v", id, err, tc.want)
			}
		})
	}
	h := headers(specID, specTS, specSig)
	h.Set(webhook.HeaderTimestamp, "yesterday")
	if _, err := webhook.Verify(h, []byte(specBody), []string{specSecret}, at(specTS)); !errors.Is(err, webhook.ErrTimestamp) {
		t.Fatalf("a timestamp that is not a number: %v", err)
	}
}

func TestSetHeadersRoundTrip(t *testing.T) {
	now := time.Now()
	h := http.Header{}
	if err := webhook.SetHeaders(h, specSecret, "msg_1", now, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if id, err := webhook.Verify(h, []byte("hello"), []string{specSecret}, nil); err != nil || id != "msg_1" {
		t.Fatalf("round trip: %q, %v", id, err)
	}
}
