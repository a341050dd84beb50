package key

import (
	"fmt"
	"io"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
)

// progress draws a one-line progress report on standard error for long
// batches, only when standard error is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	size  int64
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(ios *cli.IOStreams, size int64) *progress {
	now := time.Now()
	return &progress{w: ios.Err, on: cli.IsTerminal(ios.Err), size: size, start: now, last: now}
}

func (p *progress) update(lines int, read int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(lines) / now.Sub(p.start).Seconds()
	if p.size > 0 {
		pct := float64(read) * 100 / float64(p.size)
		const width = 30
		bar := make([]byte, width)
		for i := range bar {
			if float64(i) < pct*width/100 {
				bar[i] = '#'
			} else {
				bar[i] = '.'
			}
		}
		fmt.Fprintf(p.w, "\r[%s] %5.1f%% %d lines, %.0f keys/s", bar, pct, lines, rate)
	} else {
		fmt.Fprintf(p.w, "\r%d lines, %.0f keys/s", lines, rate)
	}
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
