package cmd

import (
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IOStreams are the streams a command reads and writes; tests inject
// buffers, Run uses the process's own.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	// Getenv reads the environment (os.Getenv unless a test replaces it).
	Getenv func(string) string
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// colorMode is the --color flag: auto, always or never.
func (ios *IOStreams) useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if ios.Getenv("NO_COLOR") != "" || ios.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// paint returns a colour for w under the --color mode: enabled or disabled
// explicitly, never by fatih/color's global guess.
func (ios *IOStreams) paint(mode string, w io.Writer, attrs ...color.Attribute) *color.Color {
	c := color.New(attrs...)
	if ios.useColor(mode, w) {
		c.EnableColor()
	} else {
		c.DisableColor()
	}
	return c
}
