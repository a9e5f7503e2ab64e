package remote

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStatusError: a non-2xx answer is a *StatusError matching ErrStatus;
// NotServed tells a missing endpoint or refused request (404, 405, 422,
// 501) from a passing failure (429, 500, 503), which the self-test
// retries.
func TestStatusError(t *testing.T) {
	for code, notServed := range map[int]bool{404: true, 405: true, 422: true, 501: true, 429: false, 500: false, 503: false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", code)
		}))
		tok, err := New(Config{Endpoints: []string{srv.URL}, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tok.Encode(context.Background(), "x")
		srv.Close()
		var se *StatusError
		if !errors.As(err, &se) || !errors.Is(err, ErrStatus) || se.Code != code || se.NotServed() != notServed || se.Body != "no" {
			t.Errorf("%d: %v (%+v), want a StatusError, not served %v", code, err, se, notServed)
		}
	}
}
