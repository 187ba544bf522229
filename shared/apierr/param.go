package apierr

// NewParam returns a new error of kind k about the request parameter
// param (its Param, which the OpenAI-style body shows).
func NewParam(k Kind, param, format string, args ...any) *Error {
	e := New(k, format, args...)
	e.Param = param
	return e
}
