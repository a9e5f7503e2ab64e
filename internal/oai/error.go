package oai

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// OpenAI error types.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypeNotFound       = "not_found_error"
	TypeRateLimit      = "rate_limit_error"
	TypeOverloaded     = "overloaded_error"
	TypeServer         = "server_error"
)

// Error is an OpenAI-style error: {"error":{"message","type","param","code"}}
// plus the HTTP status it is sent with.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
}

func (e *Error) Error() string {
	s := strconv.Itoa(e.Status) + " " + e.Type + ": " + e.Message
	if e.Param != "" {
		s += " (param " + e.Param + ")"
	}
	return s
}

// BadRequest is a 400 invalid_request_error about param.
func BadRequest(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Message: msg, Type: TypeInvalidRequest, Param: param}
}

// Errorf builds an error with a status, type and message.
func Errorf(status int, typ, msg string) *Error {
	return &Error{Status: status, Message: msg, Type: typ}
}

// Body returns the JSON body of the error.
func (e *Error) Body() []byte {
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	return b
}

// Write sends the error as JSON with its status.
func (e *Error) Write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body())
}

// ParseError decodes an OpenAI-style error body; ok is false when body is
// not one.
func ParseError(status int, body []byte) (*Error, bool) {
	var w struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(body, &w) != nil || w.Error == nil {
		return nil, false
	}
	w.Error.Status = status
	return w.Error, true
}
