package chunks

// A Filler appends the next piece of a stream's output to its Reader's
// Out (perhaps nothing) and returns the error that ends the stream: io.EOF
// after the last piece, once it is appended.
type Filler interface {
	Fill() error
}

// Reader is the io.Reader half of a stream made one piece at a time (a
// translated or rewritten upstream stream): it hands out Out and asks its
// Filler for more when Out is drained, with no goroutine and no buffering
// beyond one piece. A stream embeds it and passes itself to Init.
type Reader struct {
	fill Filler
	Out  []byte // bytes appended and not yet read
	off  int
	err  error // returned once Out is drained
}

// Init makes f the Filler of r.
func (r *Reader) Init(f Filler) { r.fill = f }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for r.off >= len(r.Out) {
		if r.err != nil {
			return 0, r.err
		}
		r.Out, r.off = r.Out[:0], 0
		r.err = r.fill.Fill()
	}
	n := copy(p, r.Out[r.off:])
	r.off += n
	return n, nil
}

// NamedEvent appends a server-sent event of type typ (an Anthropic
// stream's events are named).
func (r *Reader) NamedEvent(typ string, data []byte) {
	r.Out = append(r.Out, "event: "...)
	r.Out = append(r.Out, typ...)
	r.Out = append(r.Out, "\ndata: "...)
	r.Out = append(r.Out, data...)
	r.Out = append(r.Out, "\n\n"...)
}
