package catalog

// entries lists every provider prefix the gateway recognises. Prefixes with
// protocol None are real LiteLLM providers not implemented yet: their
// deployments load, are reported, and stay out of routing. Any other prefix
// is a typo and fails the load.
var entries = map[string]Entry{
	"openai":       {Protocol: OpenAI, DefaultBase: "https://api.openai.com/v1"},
	"azure":        {Protocol: Azure, NeedsBase: true},
	"mock":         {Protocol: Mock},
	"hosted_vllm":  {Protocol: OpenAI, NeedsBase: true},
	"openai_like":  {Protocol: OpenAI, NeedsBase: true},
	"lm_studio":    {Protocol: OpenAI, DefaultBase: "http://localhost:1234/v1"},
	"ollama_chat":  {Protocol: OpenAI, DefaultBase: "http://localhost:11434/v1"},
	"groq":         {Protocol: OpenAI, DefaultBase: "https://api.groq.com/openai/v1"},
	"deepseek":     {Protocol: OpenAI, DefaultBase: "https://api.deepseek.com/v1"},
	"mistral":      {Protocol: OpenAI, DefaultBase: "https://api.mistral.ai/v1"},
	"together_ai":  {Protocol: OpenAI, DefaultBase: "https://api.together.xyz/v1"},
	"fireworks_ai": {Protocol: OpenAI, DefaultBase: "https://api.fireworks.ai/inference/v1"},
	"openrouter":   {Protocol: OpenAI, DefaultBase: "https://openrouter.ai/api/v1"},
	"xai":          {Protocol: OpenAI, DefaultBase: "https://api.x.ai/v1"},
	"deepinfra":    {Protocol: OpenAI, DefaultBase: "https://api.deepinfra.com/v1/openai"},
	"perplexity":   {Protocol: OpenAI, DefaultBase: "https://api.perplexity.ai"},
	"anthropic":    {Protocol: Anthropic, DefaultBase: "https://api.anthropic.com"},
	// Bedrock: api_base (or aws_bedrock_runtime_endpoint) overrides the
	// regional endpoint; none is needed.
	"bedrock":          {Protocol: Bedrock},
	"bedrock_converse": {Protocol: Bedrock},

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
