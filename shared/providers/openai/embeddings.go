package openai

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// AppendEmbeddings appends an OpenAI embeddings list of vectors (JSON arrays
// of numbers), as the translating vendors (Bedrock, Gemini) answer: each
// vector as it is, or as base64 of little-endian float32s when b64
// (encoding_format: base64). A negative tokens leaves usage out (the
// gateway estimates it).
func AppendEmbeddings(out []byte, vectors []gjson.Result, b64 bool, model string, tokens int64) []byte {
	out = append(out, `{"object":"list","data":[`...)
	for i, v := range vectors {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		if b64 {
			floats := v.Array()
			raw := make([]byte, 4*len(floats))
			for j, f := range floats {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(f.Float())))
			}
			out = wire.AppendString(out, base64.StdEncoding.EncodeToString(raw))
		} else {
			out = append(out, v.Raw...)
		}
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = wire.AppendString(out, model)
	if tokens >= 0 {
		out = append(out, `,"usage":{"prompt_tokens":`...)
		out = strconv.AppendInt(out, tokens, 10)
		out = append(out, `,"total_tokens":`...)
		out = strconv.AppendInt(out, tokens, 10)
		out = append(out, '}')
	}
	return append(out, '}')
}
