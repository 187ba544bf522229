package wire

// The operations beyond chat and embeddings: LiteLLM's legacy text
// completions, images, moderations, audio and rerank. They are numbered from 16 so
// that operations added to the first block never collide with them.
const (
	OpCompletions    Op = 16 + iota // /completions: legacy text completions
	OpImages                        // /images/generations
	OpModerations                   // /moderations
	OpSpeech                        // /audio/speech: JSON in, audio bytes out
	OpTranscriptions                // /audio/transcriptions: multipart form in
	OpRerank                        // /rerank: Cohere/Jina-style rerank (model, query, documents, top_n)
)

var extraOps = [...]struct{ name, path string }{
	OpCompletions - OpCompletions:    {"text_completion", "/completions"},
	OpImages - OpCompletions:         {"image_generation", "/images/generations"},
	OpModerations - OpCompletions:    {"moderation", "/moderations"},
	OpSpeech - OpCompletions:         {"speech", "/audio/speech"},
	OpTranscriptions - OpCompletions: {"transcription", "/audio/transcriptions"},
	OpRerank - OpCompletions:         {"rerank", "/rerank"},
}

// extra returns an operation of this file's block; ok is false for others.
func (o Op) extra() (name, path string, ok bool) {
	if o < OpCompletions || int(o-OpCompletions) >= len(extraOps) {
		return "", "", false
	}
	e := extraOps[o-OpCompletions]
	return e.name, e.path, true
}

// JSONResponse reports whether the operation's upstream answers a JSON
// document the gateway may check and read usage from: speech answers audio
// bytes, and a transcription answers text, SRT or VTT when asked to.
func (o Op) JSONResponse() bool { return o != OpSpeech && o != OpTranscriptions }

// Streams reports whether the operation can answer an event stream.
func (o Op) Streams() bool {
	return o == OpChat || o == OpCompletions || o == OpResponses || o == OpMessages
}

// Media reports whether the operation is priced per image, character or
// second rather than per token (moderations: free).
func (o Op) Media() bool {
	return o == OpImages || o == OpModerations || o == OpSpeech || o == OpTranscriptions
}
