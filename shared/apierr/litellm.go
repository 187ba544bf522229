package apierr

import (
	"fmt"
	"strings"
)

// LiteLLM's words for the errors scripts match on. A message starts with
// them and adds the gateway's own detail after (issue 20); the status is
// the kind's, as in LiteLLM's current release.
const (
	// MsgNoKey: a request without a key (401).
	MsgNoKey = "Authentication Error, No api key passed in."
	// MsgInvalidKey: a key that is not the master key nor a virtual key (401).
	MsgInvalidKey = "Authentication Error, Invalid proxy server token passed."
	// MsgKeyBlocked: a blocked key (401).
	MsgKeyBlocked = "Authentication Error, Key is blocked. Update via `/key/unblock` if you're an admin."
	// MsgKeyExpired: an expired key (401).
	MsgKeyExpired = "Authentication Error - Expired Key."
	// MsgRateLimit: a key's, team's, user's or end user's rpm/tpm limit (429).
	MsgRateLimit = "Max parallel request limit reached."
)

// ModelAccessDenied is LiteLLM's refusal of a model to a key, team or user
// (who: "key", "team", "user"): "key not allowed to access model. This key
// can only access models=['a', 'b']. Tried to access c" (403).
func ModelAccessDenied(who string, allowed []string, model string) *Error {
	quoted := make([]string, len(allowed))
	for i, m := range allowed {
		quoted[i] = "'" + m + "'"
	}
	e := New(Forbidden, "%s not allowed to access model. This %s can only access models=[%s]. Tried to access %s",
		who, who, strings.Join(quoted, ", "), model)
	e.Param = "model"
	return e
}

// Detail appends the gateway's detail to one of LiteLLM's messages.
func Detail(litellm, format string, args ...any) string {
	return litellm + " " + fmt.Sprintf(format, args...)
}
