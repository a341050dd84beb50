package storeutil

// Hinted returns err with a hint for the reader: the command line prints
// it on a hint: line (it looks for a Hint method anywhere in the chain).
func Hinted(err error, hint string) error { return &hinted{err: err, hint: hint} }

type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }
func (h *hinted) Hint() string  { return h.hint }
