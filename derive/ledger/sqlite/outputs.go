package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// inlineMax is the largest output kept in the record's row. A larger one
// (run --max-output above 1 MiB) is written to a file of its own in
// OutputDir before the transaction that records the outcome, so that the
// write lock every other step of the ledger waits for is held for a short
// swap of the row whatever the output's size: a completion of 120 MB
// written into the row held it for the whole write, and a writer stopped
// (SIGSTOP, Ctrl-Z) inside it made every other key wait out the busy
// timeout and fail.
const inlineMax = 1 << 20

// maxKeptOutput bounds the read of a truncated output's kept prefix:
// the largest a face keeps (run's --max-output is at most 128 MiB).
const maxKeptOutput = 128 << 20

// The external bits of a record: which of its outputs are in files.
const (
	extStdout = 1
	extStderr = 2
)

// OutputDir is the directory of the outputs kept in files: the ledger's
// path with .outputs appended (mode 0700, its files 0600). A copy of the
// ledger needs it, as it needs ledger.db (after ledger gc, which
// checkpoints the WAL into it).
func (s *Store) OutputDir() string { return s.path + ".outputs" }

// outputFile is the file of one output of the record of key with token:
// a hash of both, so that neither needs to be a valid file name, and a
// newer attempt (another token) never shares a file with an older one.
func (s *Store) outputFile(key, token string, bit int) string {
	h := sha256.Sum256([]byte(key + "\x00" + token))
	ext := ".stdout"
	if bit == extStderr {
		ext = ".stderr"
	}
	return filepath.Join(s.OutputDir(), hex.EncodeToString(h[:])+ext)
}

// streams are a record's outputs with their external bits.
func streams(r *ledger.Record) []struct {
	bit int
	o   *ledger.Output
} {
	return []struct {
		bit int
		o   *ledger.Output
	}{{extStdout, &r.Stdout}, {extStderr, &r.Stderr}}
}

// writeOutputs writes each output of rec larger than inlineMax to its
// file (a temporary file, synced, renamed into place, the directory
// synced) and returns the external bits. Out of space is
// ledger.ErrTooLarge: the outcome is then recorded without the bytes.
func (s *Store) writeOutputs(rec *ledger.Record) (int, error) {
	external := 0
	for _, st := range streams(rec) {
		if len(st.o.Data) <= inlineMax {
			continue
		}
		if err := s.writeFile(s.outputFile(rec.Key, rec.Token, st.bit), st.o.Data); err != nil {
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) {
				err = ledger.TooLarge(err)
			}
			return 0, err
		}
		external |= st.bit
	}
	return external, nil
}

func (s *Store) writeFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		err = d.Sync()
		d.Close()
	}
	return err
}

// readOutputs reads the outputs of r kept in files. A missing file wraps
// fs.ErrNotExist (the record may have changed since it was read).
func (s *Store) readOutputs(r *ledger.Record, external int) error {
	for _, st := range streams(r) {
		if external&st.bit == 0 {
			continue
		}
		path := s.outputFile(r.Key, r.Token, st.bit)
		data, sum, err := readHashed(path, st.o)
		if err != nil {
			return fmt.Errorf("ledger %s: the recorded output of %s is kept in %s, which cannot be read (a copy of the ledger needs %s too): %w",
				s.path, r.Key, path, s.OutputDir(), err)
		}
		if !st.o.Truncated && int64(len(data)) != st.o.Length {
			return fmt.Errorf("ledger %s: the recorded output of %s in %s has %d bytes, the record says %d", s.path, r.Key, path, len(data), st.o.Length)
		}
		if !st.o.Truncated && st.o.SHA256 != "" && sum != st.o.SHA256 {
			// Changed since it was recorded: a replay would give other
			// bytes than the step wrote.
			return fmt.Errorf("ledger %s: the recorded output of %s in %s was changed since it was recorded (its sha256 is %s, the record says %s): it is not replayed",
				s.path, r.Key, path, sum, st.o.SHA256)
		}
		st.o.Data = data
	}
	return nil
}

// readHashed reads an output file, hashing it as it goes: at most the
// recorded length and one byte more (a whole stream), or the cap of a
// kept prefix (a truncated one), so that a file grown by someone else
// costs no more than the record allows.
func readHashed(path string, o *ledger.Output) (data []byte, sum string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	limit := o.Length + 1
	if o.Truncated {
		limit = maxKeptOutput + 1
	}
	// Room for the file as it is, and a byte more to see it grew: a slice
	// grown as it fills copies a 128 MiB output four times over.
	room := limit
	if fi, err := f.Stat(); err == nil && fi.Size() < room {
		room = fi.Size() + 1
	}
	h := sha256.New()
	r := io.TeeReader(io.LimitReader(f, limit), h)
	data = make([]byte, 0, room)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
	}
	return data, hex.EncodeToString(h.Sum(nil)), nil
}

// removeOutputs removes the output files of the record of key with token,
// if it had any.
func (s *Store) removeOutputs(key, token string) {
	for _, bit := range []int{extStdout, extStderr} {
		_ = os.Remove(s.outputFile(key, token, bit))
	}
}

// sweepAge is how old an output file that no record names must be before
// Checkpoint removes it: one whose completion is still on its way to the
// row is seconds old.
const sweepAge = time.Hour

// sweepOutputs removes the output files that no record names, once they
// are sweepAge old.
func (s *Store) sweepOutputs(ctx context.Context) error {
	entries, err := os.ReadDir(s.OutputDir())
	if errors.Is(err, fs.ErrNotExist) || len(entries) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	named := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, `SELECT key, token, external FROM records WHERE external <> 0`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key, token string
		var external int
		if err := rows.Scan(&key, &token, &external); err != nil {
			return err
		}
		for _, bit := range []int{extStdout, extStderr} {
			if external&bit != 0 {
				named[filepath.Base(s.outputFile(key, token, bit))] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range entries {
		if named[e.Name()] || !(strings.HasSuffix(e.Name(), ".stdout") || strings.HasSuffix(e.Name(), ".stderr") || strings.HasPrefix(e.Name(), ".tmp-")) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > sweepAge {
			_ = os.Remove(filepath.Join(s.OutputDir(), e.Name()))
		}
	}
	return nil
}
