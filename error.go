package kgagent

import (
	"errors"
	"fmt"
	"net/http"
)

// Stable error codes. Clients may branch on them; they never change meaning.
const (
	EINVALID     = "INVALID_ARGUMENT"   // malformed or out-of-range input
	ENOTFOUND    = "NOT_FOUND"          // the named thing does not exist
	ECONFLICT    = "CONFLICT"           // the thing exists or is held by another
	EUNAUTH      = "UNAUTHENTICATED"    // no or bad credentials
	EFORBIDDEN   = "FORBIDDEN"          // credentials lack the scope or collection
	ERATELIMIT   = "RATE_LIMITED"       // a quota or rate limit was hit
	ETOOLARGE    = "TOO_LARGE"          // a body, frame, embed, page or collection over its limit
	EUNAVAILABLE = "UNAVAILABLE"        // a dependency (store, bus, LLM) is unreachable
	ETIMEOUT     = "TIMEOUT"            // the deadline passed
	ECANCELED    = "CANCELED"           // the caller went away
	EINTERNAL    = "INTERNAL"           // a bug or an unexpected failure
	EUNSUPPORTED = "UNSUPPORTED_MEDIA"  // a content type that cannot be handled
	EMETHOD      = "METHOD_NOT_ALLOWED" // the path is served, not with this method

	// Codes of the Fixie agent protocol (seeds 000, 001).
	EFuncNotDefined       = "ERR_FUNC_NOT_DEFINED"
	EAgentUnhandled       = "ERR_AGENT_UNHANDLED_EXCEPTION"
	EUserStorageNeedsUser = "ERR_USERSTORAGE_REQUIRES_USER"
	EUserStorageNotFound  = "ERR_USERSTORAGE_KEY_NOT_FOUND"
)

// Error is kgagent's one error type: a stable code, a message that is safe to
// show to the caller, and optional details. Internal errors wrap their cause,
// which is logged but never sent to clients.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	Err     error          `json:"-"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the wrapped cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the given code and message wrapping cause.
func WrapError(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// ErrorCode returns the code of the first *Error in err's chain, ECANCELED or
// ETIMEOUT for context errors, EINTERNAL for any other non-nil error, and ""
// for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, errContextCanceled) {
		return ECANCELED
	}
	if errors.Is(err, errDeadline) {
		return ETIMEOUT
	}
	return EINTERNAL
}

// ErrorMessage returns the user-safe message of err: the message of its
// *Error, or a generic text for internal errors.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	switch ErrorCode(err) {
	case ECANCELED:
		return "request canceled"
	case ETIMEOUT:
		return "deadline exceeded"
	}
	return "internal error"
}

// ErrorDetails returns the details of the first *Error in err's chain.
func ErrorDetails(err error) map[string]any {
	var e *Error
	if errors.As(err, &e) {
		return e.Details
	}
	return nil
}

// HTTPStatus maps an error code to its HTTP status. This table exists once.
func HTTPStatus(code string) int {
	switch code {
	case "":
		return http.StatusOK
	case EINVALID, EUserStorageNeedsUser:
		return http.StatusBadRequest
	case ENOTFOUND, EFuncNotDefined, EUserStorageNotFound:
		return http.StatusNotFound
	case ECONFLICT:
		return http.StatusConflict
	case EUNAUTH:
		return http.StatusUnauthorized
	case EFORBIDDEN:
		return http.StatusForbidden
	case ERATELIMIT:
		return http.StatusTooManyRequests
	case ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case EUNSUPPORTED:
		return http.StatusUnsupportedMediaType
	case EMETHOD:
		return http.StatusMethodNotAllowed
	case EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case ETIMEOUT:
		return http.StatusGatewayTimeout
	case ECANCELED:
		return 499
	}
	return http.StatusInternalServerError
}
