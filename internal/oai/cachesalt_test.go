package oai

import (
	"errors"
	"testing"
)

func TestParseCacheSalt(t *testing.T) {
	for body, want := range map[string]string{
		`{"prompt":"x"}`:                      "",
		`{"cache_salt":null}`:                 "",
		`{"cache_salt":"tenant-a"}`:           "tenant-a",
		`{"prompt":"cache_salt","n":1}`:       "",
		`{"cache_salt":"a","cache_salt":"b"}`: "b", // encoding/json: the last wins
	} {
		if got, err := ParseCacheSalt([]byte(body)); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", body, got, err, want)
		}
	}
	for _, body := range []string{`{"cache_salt":""}`, `{"cache_salt":7}`, `{"cache_salt":["a"]}`, `{"cache_salt":`} {
		_, err := ParseCacheSalt([]byte(body))
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 {
			t.Errorf("%s: want a 400, got %v", body, err)
		}
	}
}

func FuzzParseCacheSalt(f *testing.F) {
	f.Add([]byte(`{"cache_salt":"tenant-a"}`))
	f.Add([]byte(`{"cache_salt":""}`))
	f.Add([]byte(`{"cache_salt":{"x":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := ParseCacheSalt(body)
		if err != nil && s != "" {
			t.Fatalf("salt %q with error %v", s, err)
		}
	})
}
