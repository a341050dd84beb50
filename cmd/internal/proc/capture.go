package proc

import "bytes"

// Capped keeps the first Max bytes written to it.
type Capped struct {
	bytes.Buffer
	Max int
}

func (c *Capped) Write(p []byte) (int, error) {
	if room := c.Max - c.Len(); room < len(p) {
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
