package responses

import (
	"encoding/base64"
	"strings"
)

// The ids the gateway gives responses are LiteLLM's: "resp_" and the
// base64 of "litellm:custom_llm_provider:<provider>;model_id:<deployment
// id>;response_id:<the provider's own id>", so that a continuation can go
// back to the deployment holding the conversation (the one that stored it
// at OpenAI), and an id LiteLLM issued decodes the same way.

// EncodeID returns the id the client sees for a response that deployment
// (of provider) answered with upstream id.
func EncodeID(provider, deployment, upstream string) string {
	s := "litellm:custom_llm_provider:" + provider + ";model_id:" + deployment + ";response_id:" + upstream
	return "resp_" + base64.StdEncoding.EncodeToString([]byte(s))
}

// DecodedID is what an id EncodeID made says.
type DecodedID struct {
	Provider, Deployment, Upstream string
}

// DecodeID reads an id EncodeID made; ok is false for any other id.
func DecodeID(id string) (d DecodedID, ok bool) {
	rest, found := strings.CutPrefix(id, "resp_")
	if !found {
		return d, false
	}
	if m := len(rest) % 4; m != 0 { // padding stripped in transit
		rest += strings.Repeat("=", 4-m)
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return d, false
	}
	parts := strings.SplitN(string(b), ";", 3)
	if len(parts) != 3 {
		return d, false
	}
	var ok1, ok2, ok3 bool
	d.Provider, ok1 = strings.CutPrefix(parts[0], "litellm:custom_llm_provider:")
	d.Deployment, ok2 = strings.CutPrefix(parts[1], "model_id:")
	d.Upstream, ok3 = strings.CutPrefix(parts[2], "response_id:")
	return d, ok1 && ok2 && ok3 && d.Upstream != ""
}
