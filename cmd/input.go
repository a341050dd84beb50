package cmd

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
)

const stdinName = "<stdin>"

// readInput reads the file called name, or standard input for "" and "-".
// It returns the bytes and the name to use in diagnostics.
func (f *Factory) readInput(name string) ([]byte, string, error) {
	if name == "" || name == "-" {
		data, err := io.ReadAll(f.IO.In)
		if err != nil {
			return nil, stdinName, &InputError{Name: stdinName, Err: err}
		}
		tuneGC(len(data))
		return data, stdinName, nil
	}
	data, err := readFile(name)
	if err != nil {
		return nil, name, &InputError{Name: name, Err: fileErr(err)}
	}
	tuneGC(len(data))
	return data, name, nil
}

// mapMin is the size from which readMapped maps a file rather than reading
// it: below it, copying the file costs less than mapping and unmapping it.
const mapMin = 1 << 20

// readMapped is readInput for a caller that reads the input only inside
// guardFaults and only through canon.WriteCanonical, which tolerates input
// that changes under it: a large regular file (standard input included)
// is mapped into memory instead of copied, which saves copying it and
// faulting in fresh memory for it, unless onePassFits says no. If the
// data is mapped, release unmaps it, and the data must not be used after;
// otherwise release is nil.
func (f *Factory) readMapped(name string) (data []byte, display string, release func(), err error) {
	file, display := f.IO.In, stdinName
	if name != "" && name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, name, nil, &InputError{Name: name, Err: fileErr(err)}
		}
		defer fh.Close() // a mapping outlives its descriptor
		file, display = fh, name
	}
	if fh, ok := file.(*os.File); ok {
		if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Size() >= mapMin && st.Size() <= canon.MaxSize {
			if off, err := fh.Seek(0, io.SeekCurrent); err == nil && off == 0 && onePassFits(fh, st.Size()) {
				if data, unmap, ok := mapFile(fh, st.Size()); ok {
					// The heap stays small: the collector's default target
					// is right (see tuneGC).
					return data, display, unmap, nil
				}
			}
		}
	}
	data, display, err = f.readInput(name)
	return data, display, nil, err
}

// onePassFits says whether the one pass suits a file of size bytes: it
// holds the canonical text of the root's largest child about twice, which
// for a large file is reasonable only when the root is an array (of
// records, typically).
func onePassFits(f *os.File, size int64) bool {
	if size < canon.ParallelMin {
		return true
	}
	var head [4096]byte
	n, _ := f.ReadAt(head[:], 0)
	return rootIsArray(head[:n])
}

// rootIsArray reports whether a JSON text starts with '[' after white
// space.
func rootIsArray(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '['
	}
	return false
}

// guardFaults runs fn with memory faults turned into an input error: the
// input may be a mapped file that is truncated meanwhile, which makes
// reading it fault, on this goroutine or on one of canon's (see
// canon.IsFault).
func guardFaults(name string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !canon.IsFault(r) {
				panic(r)
			}
			err = &InputError{Name: name, Err: errors.New("the file changed while it was read: it was truncated")}
		}
	}()
	return fn()
}

// readFile reads a file; a large regular file is read in parts on every
// core at once, which copies it out of the page cache about twice as fast.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	parts := int64(runtime.GOMAXPROCS(0))
	if !st.Mode().IsRegular() || size < 8<<20 || size > 1<<40 || parts < 2 {
		return io.ReadAll(f)
	}
	parts = min(parts, 4)
	buf := make([]byte, size)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := int64(0); i < parts; i++ {
		lo, hi := size*i/parts, size*(i+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.ReadAt(buf[lo:hi], lo)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err == io.EOF {
			return nil, errors.New("file shrank while it was read")
		}
		if err != nil {
			return nil, err
		}
	}
	// A file that grew while it was read is read to its new end.
	rest, err := io.ReadAll(io.NewSectionReader(f, size, 1<<62))
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// tuneGC lowers the collector's growth target for large inputs. The live
// heap is then mostly the input and its index, which hold no pointers and
// cost nothing to mark, while the default target (twice the live heap)
// would let the process's memory grow to twice what it needs.
func tuneGC(size int) {
	if size >= 8<<20 {
		debug.SetGCPercent(20)
	}
}

// fileErr shortens an os error to what is wrong ("no such file or
// directory", "is a directory"): the file name is already in front.
func fileErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, syscall.EISDIR) {
			return errors.New("is a directory, not a file")
		}
		return pe.Err
	}
	return err
}

// parseDoc parses input under a scheme, as an input error on failure.
func parseDoc(data []byte, name string, s canon.Scheme) (*canon.Document, error) {
	d, err := canon.Parse(data, s)
	if err != nil {
		return nil, &InputError{Name: name, Err: err}
	}
	return d, nil
}

// scheme returns the --scheme setting.
func (f *Factory) scheme() (canon.Scheme, error) {
	s, err := canon.ParseScheme(f.Config.GetString("scheme"))
	if err != nil {
		return 0, &UsageError{Err: err}
	}
	return s, nil
}

// taskTool returns the --task and --tool settings (flag, IDEMKEY_TASK and
// IDEMKEY_TOOL, config), both required.
func (f *Factory) taskTool() (task, tool string, err error) {
	task, tool = f.Config.GetString("task"), f.Config.GetString("tool")
	switch {
	case task == "":
		return "", "", &UsageError{Err: errors.New("missing task id: give --task or set IDEMKEY_TASK"),
			hint: "the task id scopes the key; an empty one would let keys collide across tasks"}
	case tool == "":
		return "", "", &UsageError{Err: errors.New("missing tool name: give --tool or set IDEMKEY_TOOL"),
			hint: "the key is scoped by the tool name as well as the task id"}
	}
	if err := (derive.Call{Task: task, Tool: tool}).Validate(); err != nil {
		return "", "", &UsageError{Err: err}
	}
	return task, tool, nil
}

// jsonObject writes one JSON object on one line, with strings escaped as
// the canonical forms escape them (a lone surrogate survives as \udxxx).
type jsonObject struct{ b []byte }

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = canon.AppendQuoted(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) *jsonObject {
	o.key(k)
	o.b = canon.AppendQuoted(o.b, v)
	return o
}

func (o *jsonObject) raw(k string, v []byte) *jsonObject {
	o.key(k)
	o.b = append(o.b, v...)
	return o
}

func (o *jsonObject) int(k string, v int) *jsonObject {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
	return o
}

func (o *jsonObject) bool(k string, v bool) *jsonObject {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
	return o
}

// line returns the object and a newline.
func (o *jsonObject) line() []byte {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	}
	return append(o.b, '}', '\n')
}
