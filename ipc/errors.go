package ipc

import (
	"errors"
	"fmt"
)

// The HTTP statuses of the API (the client does without net/http).
const (
	statusSwitching   = 101
	statusOK          = 200
	statusCreated     = 201
	statusNoContent   = 204
	statusBadRequest  = 400
	statusForbidden   = 403
	statusNotFound    = 404
	statusConflict    = 409
	statusTooMany     = 429
	statusUnavailable = 503
)

// Error codes.
const (
	CodeBadRequest  = "bad_request"
	CodeNotFound    = "not_found"
	CodeAmbiguous   = "ambiguous"
	CodeConflict    = "conflict"
	CodeForbidden   = "forbidden"
	CodeTooLarge    = "too_large"
	CodeTooMany     = "too_many_requests"
	CodeUnavailable = "unavailable"
	CodeInternal    = "internal"
)

// Error is an API error: what the server sends and what the client returns.
type Error struct {
	Status     int
	Code       string
	Message    string
	Candidates []string
	// cause is the error the message was made from (%w), on the server.
	cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the error the message was made from with %w, so that
// errors.Is and errors.As see through an API error on the server side.
func (e *Error) Unwrap() error { return e.cause }

// Is lets errors.Is match an *Error against the sentinels by code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && t.Message == ""
	}
	return false
}

// Sentinels that errors.Is matches against any *Error with the same code.
var (
	ErrBadRequest = &Error{Status: statusBadRequest, Code: CodeBadRequest}
	ErrNotFound   = &Error{Status: statusNotFound, Code: CodeNotFound}
	ErrAmbiguous  = &Error{Status: statusConflict, Code: CodeAmbiguous}
	ErrConflict   = &Error{Status: statusConflict, Code: CodeConflict}
	ErrForbidden  = &Error{Status: statusForbidden, Code: CodeForbidden}
	ErrTooMany    = &Error{Status: statusTooMany, Code: CodeTooMany}
)

// newError formats the message as fmt.Errorf does: an error given with %w
// stays in the chain.
func newError(status int, code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Status: status, Code: code, Message: err.Error(), cause: errors.Unwrap(err)}
}

// BadRequest returns a 400 error.
func BadRequest(format string, args ...any) *Error {
	return newError(statusBadRequest, CodeBadRequest, format, args...)
}

// NotFound returns a 404 error.
func NotFound(format string, args ...any) *Error {
	return newError(statusNotFound, CodeNotFound, format, args...)
}

// Conflict returns a 409 error: the request is valid but the state forbids it.
func Conflict(format string, args ...any) *Error {
	return newError(statusConflict, CodeConflict, format, args...)
}

// Forbidden returns a 403 error.
func Forbidden(format string, args ...any) *Error {
	return newError(statusForbidden, CodeForbidden, format, args...)
}

// Ambiguous returns the error for an id prefix that matches several sessions.
func Ambiguous(prefix string, candidates []string) *Error {
	e := newError(statusConflict, CodeAmbiguous, "session id %q is ambiguous: it matches %d sessions", prefix, len(candidates))
	e.Candidates = candidates
	return e
}

// AmbiguousName returns the error for a name that live sessions of several
// users hold; holders are their USER/NAME, which selects one.
func AmbiguousName(name string, holders []string) *Error {
	e := newError(statusConflict, CodeAmbiguous, "session name %q is held by %d users' live sessions: say which as USER/NAME", name, len(holders))
	e.Candidates = holders
	return e
}

// TooMany returns a 429 error: a limit of the daemon's config, which the
// message names, refuses the request.
func TooMany(format string, args ...any) *Error {
	return newError(statusTooMany, CodeTooMany, format, args...)
}

// Unavailable returns a 503 error.
func Unavailable(format string, args ...any) *Error {
	return newError(statusUnavailable, CodeUnavailable, format, args...)
}

// UnreachableError is returned by the client when no daemon answers on the socket.
type UnreachableError struct {
	Socket string
	Err    error
	// Remote: Socket is a host's URL (ssh://...), reached through SSH.
	Remote bool
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach sessiond at %s: %v", e.Socket, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }
