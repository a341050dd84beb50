//go:build linux

package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedMappedFile maps a file, truncates it, and checks that
// reading past its new end inside guardFaults is an input error, not a
// crash.
func TestTruncatedMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "args.json")
	doc := "[\n" + strings.Repeat("{\"a\": 1},\n", mapMin/10) + "{}\n]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &Factory{IO: &IOStreams{In: strings.NewReader("")}}
	data, name, release, err := f.readMapped(path)
	if err != nil || release == nil {
		t.Fatalf("not mapped (%v)", err)
	}
	defer release()
	if string(data) != doc {
		t.Fatalf("mapped %d bytes, want the file's %d", len(data), len(doc))
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err = guardFaults(name, func() error {
		sum := 0
		for i := 0; i < len(data); i += 4096 {
			sum += int(data[i])
		}
		t.Errorf("read past the end of a truncated file without a fault (%d)", sum)
		return nil
	})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Name != path || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v (%T), want an input error about the truncation", err, err)
	}
	if err := guardFaults(name, func() error { return nil }); err != nil {
		t.Fatalf("no fault: %v", err)
	}
}
