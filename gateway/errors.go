package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
)

// errorBody is the JSON every REST error has: {"error":{"code","message"}}.
type errorBody struct {
	Error *kgagent.Error `json:"error"`
}

// toError returns err as a client-safe *kgagent.Error: internal causes are
// dropped, the code and message kept.
func toError(err error) *kgagent.Error {
	return &kgagent.Error{
		Code:    kgagent.ErrorCode(err),
		Message: kgagent.ErrorMessage(err),
		Details: kgagent.ErrorDetails(err),
	}
}

// writeError writes err as REST's error object ({"error":{...}}), through
// writeErrorAs.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeErrorAs(w, r, 0, err, func(e *kgagent.Error) any { return errorBody{Error: e} })
}

// writeErrorAs is the one HTTP error writer of every route (REST, the
// OpenAI API, the agent protocol): it logs an internal error in full, sets
// Retry-After on a daily-limit refusal (its retry_after_s detail), and
// writes the body the route's protocol wants (body of the client-safe
// error) with status, or, when status is 0, the one kgagent.HTTPStatus
// gives the error's code.
func (s *Server) writeErrorAs(w http.ResponseWriter, r *http.Request, status int, err error, body func(*kgagent.Error) any) {
	e := toError(err)
	if status == 0 {
		status = kgagent.HTTPStatus(e.Code)
	}
	if e.Code == kgagent.EINTERNAL || e.Code == kgagent.EAgentUnhandled {
		s.log.ErrorContext(r.Context(), "request failed", "err", err, "path", r.URL.Path, "request_id", requestID(r.Context()))
	}
	if e.Code == kgagent.ERATELIMIT {
		if ra, ok := e.Details["retry_after_s"]; ok {
			w.Header().Set("Retry-After", jsonString(ra))
		}
	}
	writeJSON(w, status, body(e))
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Reasons put in the details of EINVALID errors from the decoders, so clients
// can tell them apart.
const (
	ReasonInvalidJSON  = "invalid_json"
	ReasonWrongType    = "wrong_type"
	ReasonInvalidUTF8  = "invalid_utf8"
	ReasonMissingField = "missing_field"
	ReasonUnknownValue = "unknown_value"
)

func invalid(reason, field, format string, args ...any) *kgagent.Error {
	e := kgagent.Errorf(kgagent.EINVALID, format, args...)
	e.Details = map[string]any{"reason": reason}
	if field != "" {
		e.Details["field"] = field
	}
	return e
}

// decodeJSON decodes one JSON value from data into v, strictly: valid UTF-8,
// one value, types as declared. Errors are EINVALID with a reason detail.
func decodeJSON(data []byte, v any) error {
	if !utf8.Valid(data) {
		return invalid(ReasonInvalidUTF8, "", "body is not valid UTF-8")
	}
	if string(bytes.TrimSpace(data)) == "null" {
		return invalid(ReasonWrongType, "", "body must be a JSON object, not null")
	}
	dec := json.NewDecoder(bytesReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return invalid(ReasonWrongType, "", "body must be %s, not %s", jsonKind(te.Type), te.Value)
			}
			return invalid(ReasonWrongType, te.Field, "field %q must be %s, not %s", te.Field, jsonKind(te.Type), te.Value)
		}
		if errors.Is(err, io.EOF) {
			return invalid(ReasonInvalidJSON, "", "body is empty")
		}
		return invalid(ReasonInvalidJSON, "", "body is not valid JSON: %v", err)
	}
	if dec.More() {
		return invalid(ReasonInvalidJSON, "", "body has data after the JSON value")
	}
	return nil
}

// jsonKind names the JSON value a Go type decodes from ("a JSON object"),
// so that errors never name the server's Go types.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// readBody reads a REST body within the configured limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, kgagent.Errorf(kgagent.ETOOLARGE, "body is over %d bytes", s.cfg.MaxBodyBytes)
		}
		return nil, kgagent.WrapError(kgagent.EINVALID, err, "cannot read body")
	}
	return data, nil
}

// checkJSONType fails with EUNSUPPORTED unless the request says its body is
// JSON (application/json or a +json type). A body without a Content-Type is
// refused too: browsers send one cross-site without a CORS preflight.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return kgagent.Errorf(kgagent.EUNSUPPORTED, "Content-Type must be application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return kgagent.Errorf(kgagent.EUNSUPPORTED, "Content-Type must be application/json, not %q", ct)
}

// readJSONBody reads a JSON body within the configured limit; EUNSUPPORTED
// when the Content-Type is not JSON.
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := checkJSONType(r); err != nil {
		return nil, err
	}
	return s.readBody(w, r)
}

// decodeBody reads and decodes a REST JSON body into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := s.readJSONBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(data, v)
}
