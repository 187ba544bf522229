package apierr

import (
	"errors"
	"fmt"
)

// Store errors: the one vocabulary of what went wrong in a store, whatever
// the backend (go-cloud's gcerrors codes). Every store's errors wrap one
// of these (package keys names them too); Store maps them to the client's
// error once.
var (
	ErrNotFound    = errors.New("not found")      // no such record
	ErrExists      = errors.New("already exists") // the record's id (or alias) is taken
	ErrInvalid     = errors.New("invalid")        // the write or query is malformed
	ErrUnavailable = errors.New("unavailable")    // the store did not answer: try again
	ErrConflict    = errors.New("conflict")       // changed concurrently past the retries
)

// Classed returns a sentinel error of a store package (limits, spend,
// cooldown) saying msg, in the class of one of the store errors above:
// errors.Is(err, class) holds for it and for every error wrapping it, so
// Store maps it with no mapping of the package's own.
func Classed(class error, msg string) error { return &classedError{msg: msg, class: class} }

type classedError struct {
	msg   string
	class error
}

func (e *classedError) Error() string        { return e.msg }
func (e *classedError) Is(target error) bool { return target == e.class }

// InvalidParam is an ErrInvalid that names the request parameter at
// fault (LiteLLM's and OpenAI's "param"): a store's validation error for
// a field the admin API reads under that name.
type InvalidParam struct {
	Param  string // "team_id", "metadata", ...
	Reason string // why, with the limit: "want at most 65536 bytes of JSON, got 512000"
}

func (e *InvalidParam) Error() string { return e.Param + ": invalid: " + e.Reason }

// Is makes an InvalidParam an ErrInvalid.
func (e *InvalidParam) Is(target error) bool { return target == ErrInvalid }

// Store returns the client's error for err from a store: an *Error passes
// through; ErrUnavailable is a 503, ErrNotFound a 404, ErrInvalid a 400
// carrying the store's message (it names the field and never a secret)
// and, from an InvalidParam, its param,
// ErrConflict a 409, and anything else a 500. ErrExists is answered by the
// route that knows the record, with Taken; reaching here it is a 500.
func Store(err error) *Error {
	var e *Error
	var p *InvalidParam
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &p):
		return &Error{Kind: InvalidRequest, Message: err.Error(), Param: p.Param}
	case errors.Is(err, ErrUnavailable):
		return &Error{Kind: Unavailable, Message: "the store did not answer; try again", Cause: err}
	case errors.Is(err, ErrNotFound):
		return &Error{Kind: NotFound, Message: "not found", Cause: err}
	case errors.Is(err, ErrInvalid):
		return &Error{Kind: InvalidRequest, Message: err.Error()}
	case errors.Is(err, ErrConflict):
		return &Error{Kind: Conflict, Message: "the record changed concurrently; try again", Cause: err}
	}
	return &Error{Kind: Internal, Message: "internal error", Cause: err}
}

// Taken is the client's error for a record whose id (or alias) is taken
// (ErrExists), naming the request parameter that gave it. The status
// differs by record kind because LiteLLM's does, and this API has always
// answered as it: a user is a 409 (LiteLLM's /user/new raises 409, "User
// with id ... already exists"), every other record a 400 (its /team/new
// raises 400, "Team id = ... already exists"; keys, memberships and
// customers report the taken value as a bad parameter). record is "key",
// "team", "member", "end user" or "user".
func Taken(record, param, format string, args ...any) *Error {
	k := InvalidRequest
	if record == "user" {
		k = Conflict
	}
	return &Error{Kind: k, Message: param + ": " + fmt.Sprintf(format, args...), Param: param}
}
