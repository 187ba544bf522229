package config

// providerSpec says how the gateway reaches a provider named by the prefix of
// litellm_params.model ("openai/gpt-4o").
type providerSpec struct {
	protocol    Protocol
	defaultBase string // for OpenAI-compatible hosted providers
	needsBase   bool   // api_base is required (self-hosted servers)
}

// providers lists every provider prefix the gateway recognises. Prefixes with
// ProtocolNone are real LiteLLM providers not implemented yet: their
// deployments load, are reported, and stay out of routing. Any other prefix
// is a typo and fails the load.
var providers = map[string]providerSpec{
	"openai":      {protocol: ProtocolOpenAI, defaultBase: "https://api.openai.com/v1"},
	"azure":       {protocol: ProtocolAzure, needsBase: true},
	"mock":        {protocol: ProtocolMock},
	"hosted_vllm": {protocol: ProtocolOpenAI, needsBase: true},
	"openai_like": {protocol: ProtocolOpenAI, needsBase: true},
	"lm_studio":   {protocol: ProtocolOpenAI, defaultBase: "http://localhost:1234/v1"},
	"ollama_chat": {protocol: ProtocolOpenAI, defaultBase: "http://localhost:11434/v1"},
	"groq":        {protocol: ProtocolOpenAI, defaultBase: "https://api.groq.com/openai/v1"},
	"deepseek":    {protocol: ProtocolOpenAI, defaultBase: "https://api.deepseek.com/v1"},
	"mistral":     {protocol: ProtocolOpenAI, defaultBase: "https://api.mistral.ai/v1"},
	"together_ai": {protocol: ProtocolOpenAI, defaultBase: "https://api.together.xyz/v1"},
	"fireworks_ai": {protocol: ProtocolOpenAI,
		defaultBase: "https://api.fireworks.ai/inference/v1"},
	"openrouter": {protocol: ProtocolOpenAI, defaultBase: "https://openrouter.ai/api/v1"},
	"xai":        {protocol: ProtocolOpenAI, defaultBase: "https://api.x.ai/v1"},
	"deepinfra":  {protocol: ProtocolOpenAI, defaultBase: "https://api.deepinfra.com/v1/openai"},
	"perplexity": {protocol: ProtocolOpenAI, defaultBase: "https://api.perplexity.ai"},
	"anthropic":  {protocol: ProtocolAnthropic, defaultBase: "https://api.anthropic.com"},
	// Bedrock: api_base (or aws_bedrock_runtime_endpoint) overrides the
	// regional endpoint; none is needed.
	"bedrock":          {protocol: ProtocolBedrock},
	"bedrock_converse": {protocol: ProtocolBedrock},

	// Known LiteLLM providers, not implemented yet.
	"vertex_ai": {}, "vertex_ai_beta": {},
	"gemini": {}, "cohere": {}, "cohere_chat": {}, "sagemaker": {}, "huggingface": {},
	"replicate": {}, "watsonx": {}, "databricks": {}, "cloudflare": {}, "azure_ai": {},
	"ai21": {}, "voyage": {}, "ollama": {}, "text-completion-openai": {}, "nvidia_nim": {},
	"cerebras": {}, "sambanova": {}, "predibase": {}, "triton": {}, "clarifai": {},
	"anyscale": {}, "friendliai": {}, "github": {}, "jina_ai": {}, "nlp_cloud": {},
	"aleph_alpha": {}, "petals": {}, "palm": {}, "baseten": {}, "vllm": {}, "dashscope": {},
	"moonshot": {}, "volcengine": {}, "litellm_proxy": {},
}
