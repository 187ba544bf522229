package gateway

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Media calls (images, speech, transcriptions, moderations) are priced per
// image, character or second from the media price table
// (pricing.DefaultMedia), and a transcription's body is a multipart form
// whose model field the gateway reads and rewrites.

// The media APIs. Each is served under /v1, / and /openai/v1, and all but
// moderations under Azure's deployment paths.
var (
	_ = registerAPI(&api{op: wire.OpImages, name: "image_generation", paths: openAIPaths("/images/generations"), azure: "/images/generations",
		media: true, bill: (*exchange).billMedia, worstCase: imagesWorstCase})
	_ = registerAPI(&api{op: wire.OpModerations, name: "moderations", paths: openAIPaths("/moderations"),
		media: true, free: true, bill: (*exchange).billMedia})
	_ = registerAPI(&api{op: wire.OpSpeech, name: "audio_speech", paths: openAIPaths("/audio/speech"), azure: "/audio/speech",
		media: true, rawOut: true, bill: (*exchange).billMedia, worstCase: speechWorstCase})
	_ = registerAPI(&api{op: wire.OpTranscriptions, name: "audio_transcriptions", paths: openAIPaths("/audio/transcriptions"), azure: "/audio/transcriptions",
		media: true, rawOut: true, noPrompt: true, bill: (*exchange).billMedia, parse: parseTranscription, call: (*exchange).formCall,
		unreservable: "strict_budgets: a transcription is priced per second of audio, which is not known before the call, so its worst-case cost cannot be reserved"})
)

// parseTranscription reads a transcription's multipart form: its state.
func parseTranscription(r *http.Request, body []byte, pathModel string) (*wire.Request, any, error) {
	f, err := parseForm(body, r.Header.Get("Content-Type"))
	if err != nil {
		return nil, nil, err
	}
	if pathModel != "" {
		f.model = pathModel
	}
	return &wire.Request{Body: body, Model: f.model, User: f.user, NumRetries: -1}, f, nil
}

// formCall is a transcription's call: its form with the attempt's model.
func (x *exchange) formCall(a *router.Attempt) wire.Call {
	body, contentType := x.state.(*form).withModel(a.ProviderModel)
	return wire.Call{Op: x.api.op, Body: body, ContentType: contentType}
}

// form is a transcription's multipart form, read once, written again with
// each attempt's model.
type form struct {
	boundary    string
	contentType string // the client's Content-Type: multipart/form-data with its boundary
	parts       []formPart
	model       string
	user        string
	fileBytes   int // the size of the uploaded file, for an estimate of its duration
}

type formPart struct {
	header textproto.MIMEHeader
	name   string
	value  []byte
}

// maxFormParts bounds the fields of a form (OpenAI's have a dozen).
const maxFormParts = 64

// parseForm reads a multipart/form-data body.
func parseForm(body []byte, contentType string) (*form, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, apierr.New(apierr.InvalidRequest, "this route takes a multipart/form-data body (file, model, ...), got Content-Type %q", contentType)
	}
	f := &form{boundary: params["boundary"], contentType: contentType}
	mr := multipart.NewReader(bytes.NewReader(body), f.boundary)
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, apierr.New(apierr.InvalidRequest, "invalid multipart body: %v", err)
		}
		if len(f.parts) == maxFormParts {
			return nil, apierr.New(apierr.InvalidRequest, "invalid multipart body: more than %d parts", maxFormParts)
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return nil, apierr.New(apierr.InvalidRequest, "invalid multipart body: %v", err)
		}
		name := p.FormName()
		switch {
		case name == "model" && p.FileName() == "":
			f.model = string(v)
		case name == "user" && p.FileName() == "":
			f.user = string(v)
		case name == "file":
			f.fileBytes = len(v)
		}
		f.parts = append(f.parts, formPart{header: p.Header, name: name, value: v})
	}
	if f.fileBytes == 0 {
		e := apierr.New(apierr.InvalidRequest, "missing required parameter: 'file'")
		e.Param = "file"
		return nil, e
	}
	return f, nil
}

// withModel returns the form's body with its model field set to model, and
// its Content-Type: the client's boundary where Go's writer accepts it, else
// a new one.
func (f *form) withModel(model string) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	contentType := f.contentType
	if mw.SetBoundary(f.boundary) != nil {
		contentType = mw.FormDataContentType()
	}
	wrote := false
	for _, p := range f.parts {
		v := p.value
		if p.name == "model" && !wrote {
			v, wrote = []byte(model), true
		} else if p.name == "model" {
			continue
		}
		pw, _ := mw.CreatePart(p.header)
		_, _ = pw.Write(v)
	}
	if !wrote {
		_ = mw.WriteField("model", model)
	}
	_ = mw.Close()
	return b.Bytes(), contentType
}

// bytesPerSecond estimates an audio file's duration from its size when the
// provider did not say it: 16 KB a second is MP3 at 128 kbit/s.
const bytesPerSecond = 16000

// billMedia bills a media call: its usage for the limits (the provider's,
// when it reports one, else the prompt estimate) and its cost from the
// media price table, else from the deployment's token price when the
// provider reported tokens. It returns the completion tokens.
func (x *exchange) billMedia(a *router.Attempt, call wire.Call, out []byte) int64 {
	u, reported := wire.UsageOf(out)
	if x.api.op == wire.OpSpeech {
		reported = false // audio bytes
	}
	if !reported {
		u = wire.Usage{PromptTokens: int64(call.PromptTokens), TotalTokens: int64(call.PromptTokens)}
	}
	cost, known, estimated := x.mediaCost(a, out, u, reported)
	return x.charge(u, estimated, cost, known)
}

// mediaCost prices a media call; estimated: a transcription's duration
// was estimated from the file's size.
func (x *exchange) mediaCost(a *router.Attempt, out []byte, u wire.Usage, reported bool) (cost int64, known, estimated bool) {
	tab := pricing.DefaultMedia()
	d := a.Deployment
	names := []string{d.BaseModel, a.ProviderModel, d.Model}
	lookup := func() (pricing.Media, bool) {
		for _, n := range names {
			if m, ok := tab.Lookup(n); n != "" && ok {
				return m, true
			}
		}
		return pricing.Media{}, false
	}
	tokens := func() (int64, bool, bool) {
		if p, ok := x.h.priceOf(a); ok && reported {
			return p.CostNanos(u), true, false
		}
		return 0, false, false
	}
	body := x.req.Body
	switch x.api.op {
	case wire.OpModerations: // free at OpenAI, whatever the model
		return 0, true, false
	case wire.OpImages:
		size, quality := gjson.GetBytes(body, "size").Str, gjson.GetBytes(body, "quality").Str
		n := max(gjson.GetBytes(body, "n").Int(), 1)
		if got := int64(len(gjson.GetBytes(out, "data").Array())); got > 0 {
			n = got // what was made is what is billed
		}
		for _, name := range names {
			if name == "" {
				continue
			}
			if cost, ok := tab.ImageCostNanos(name, size, quality, n); ok {
				return cost, true, false
			}
		}
		return tokens()
	case wire.OpSpeech:
		if m, ok := lookup(); ok && m.PerCharacter > 0 {
			chars := utf8.RuneCountInString(gjson.GetBytes(body, "input").Str)
			return pricing.NanosOf(m.PerCharacter, float64(chars)), true, false
		}
		return tokens()
	case wire.OpTranscriptions:
		m, ok := lookup()
		if !ok || m.PerSecond == 0 {
			return tokens()
		}
		if d := gjson.GetBytes(out, "duration"); d.Type == gjson.Number { // verbose_json
			return pricing.NanosOf(m.PerSecond, d.Num), true, false
		}
		if s := gjson.GetBytes(out, "usage"); s.Get("type").Str == "duration" && s.Get("seconds").Type == gjson.Number {
			return pricing.NanosOf(m.PerSecond, s.Get("seconds").Num), true, false
		}
		secs := float64(x.state.(*form).fileBytes) / bytesPerSecond
		return pricing.NanosOf(m.PerSecond, secs), true, true
	}
	return tokens()
}
