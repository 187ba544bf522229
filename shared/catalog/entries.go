package catalog

// entries lists every provider prefix the gateway recognises: those below,
// the OpenAI-compatible ones and those not implemented yet (their
// deployments load, are reported, and stay out of routing). Any other
// prefix is a typo and fails the load.
var entries = table(map[string]Entry{
	"azure":     {Protocol: Azure, NeedsBase: true},
	"mock":      {Protocol: Mock},
	"anthropic": {Protocol: Anthropic, DefaultBase: "https://api.anthropic.com"},
	// Bedrock: api_base (or aws_bedrock_runtime_endpoint) overrides the
	// regional endpoint; none is needed.
	"bedrock":          {Protocol: Bedrock},
	"bedrock_converse": {Protocol: Bedrock},
	// Google AI Studio: api_base is the base with its version, to which
	// /models/{model}:{method} is added (LiteLLM's reading).
	"gemini": {Protocol: Gemini, DefaultBase: "https://generativelanguage.googleapis.com/v1beta"},
	// Vertex AI: the URL follows from vertex_project and vertex_location;
	// an api_base is the whole URL up to the model.
	"vertex_ai": {Protocol: Vertex},
})

// openAIBases are the providers that speak OpenAI's API, by their API base
// ("": self-hosted, the config must give api_base).
var openAIBases = map[string]string{
	"openai":       "https://api.openai.com/v1",
	"hosted_vllm":  "",
	"openai_like":  "",
	"lm_studio":    "http://localhost:1234/v1",
	"ollama_chat":  "http://localhost:11434/v1",
	"groq":         "https://api.groq.com/openai/v1",
	"deepseek":     "https://api.deepseek.com/v1",
	"mistral":      "https://api.mistral.ai/v1",
	"together_ai":  "https://api.together.xyz/v1",
	"fireworks_ai": "https://api.fireworks.ai/inference/v1",
	"openrouter":   "https://openrouter.ai/api/v1",
	"xai":          "https://api.x.ai/v1",
	"deepinfra":    "https://api.deepinfra.com/v1/openai",
	"perplexity":   "https://api.perplexity.ai",
	// OpenAI's legacy completions (gpt-3.5-turbo-instruct, or any server's
	// /v1/completions): text completions pass through; chat is sent as a
	// text completion (providers/textcompletion.go), as LiteLLM sends it.
	"text-completion-openai": "https://api.openai.com/v1",
}

// notImplemented are known LiteLLM providers the gateway cannot call yet.
var notImplemented = []string{
	"vertex_ai_beta",
	"cohere", "cohere_chat", "sagemaker", "huggingface",
	"replicate", "watsonx", "databricks", "cloudflare", "azure_ai",
	"ai21", "voyage", "ollama", "nvidia_nim",
	"cerebras", "sambanova", "predibase", "triton", "clarifai",
	"anyscale", "friendliai", "github", "jina_ai", "nlp_cloud",
	"aleph_alpha", "petals", "palm", "baseten", "vllm", "dashscope",
	"moonshot", "volcengine", "litellm_proxy",
}

func table(m map[string]Entry) map[string]Entry {
	for name, base := range openAIBases {
		m[name] = Entry{Protocol: OpenAI, DefaultBase: base, NeedsBase: base == ""}
	}
	for _, name := range notImplemented {
		m[name] = Entry{}
	}
	return m
}
