package wire

// Rename makes model the request's model (a principal's model alias
// resolved): what the gateway routes, checks and logs. The body keeps its
// own until WithModel writes the deployment's model over it.
func (r *Request) Rename(model string) {
	r.Model = model
	r.renamed = true
}
