package canon_test

// Published RFC 8785 conformance data, copied into ../testdata/jcs (see its
// SOURCE.md): the JCS reference vectors and the ES6 number file.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

const jcsDir = "../testdata/jcs"

// jsDiffers holds the vectors whose js-scheme output differs from RFC 8785,
// with the output the reference harness computes on Node (JSON.parse, then
// JSON.stringify with its sorting replacer): array-index names ("1", "10",
// "111") come first, in numeric order.
var jsDiffers = map[string]string{
	"structures": `{"1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"":"empty","A":{},"a":{}}`,
	"weird":      "{\"1\":\"One\",\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"</script>\":\"Browser Challenge\",\"\u0080\":\"Control\u007f\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001f602\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
}

func TestJCSVectors(t *testing.T) {
	dirs := []string{
		filepath.Join(jcsDir, "testdata"),
		filepath.Join(jcsDir, "gowebpki-extra", "testdata"),
	}
	n, hexChecked := 0, 0
	for _, dir := range dirs {
		inputs, err := filepath.Glob(filepath.Join(dir, "input", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			name := strings.TrimSuffix(filepath.Base(in), ".json")
			n++
			t.Run(name, func(t *testing.T) {
				src := readFile(t, in)
				want := readFile(t, filepath.Join(dir, "output", name+".json"))
				// gowebpki ships no outhex file for simpleString.
				if h, err := os.ReadFile(filepath.Join(dir, "outhex", name+".txt")); err == nil {
					if wantHex := decodeHex(t, h); !bytes.Equal(want, wantHex) {
						t.Fatalf("output/%s.json and outhex/%s.txt disagree", name, name)
					}
					hexChecked++
				}

				got, err := canon.Append(nil, src, canon.JCS)
				if err != nil {
					t.Fatalf("jcs: %v", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("jcs:\n got %s\nwant %s", got, want)
				}
				if again, err := canon.Append(nil, got, canon.JCS); err != nil || !bytes.Equal(again, got) {
					t.Errorf("jcs: canonical form is not a fixed point: %s (%v)", again, err)
				}

				wantJS := string(want)
				if s, ok := jsDiffers[name]; ok {
					wantJS = s
				}
				gotJS, err := canon.Append(nil, src, canon.JS)
				if err != nil {
					t.Fatalf("js: %v", err)
				}
				if string(gotJS) != wantJS {
					t.Errorf("js:\n got %s\nwant %s", gotJS, wantJS)
				}
			})
		}
	}
	// 6 cyberphone vectors and 4 gowebpki scalars: a missing file must not
	// silently shrink the suite.
	if n != 10 || hexChecked != 9 {
		t.Errorf("ran %d vectors (want 10), %d with outhex (want 9)", n, hexChecked)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeHex decodes the outhex files: hex bytes in either case, separated
// by white space.
func decodeHex(t *testing.T, text []byte) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestES6Numbers checks every line "hex,expected" of the ES6 number file:
// AppendNumber of the double with those bits writes expected, and expected,
// read as a JSON number, is already canonical under both schemes.
func TestES6Numbers(t *testing.T) {
	f, err := os.Open(filepath.Join(jcsDir, "es6numbers", "es6testfile_first100000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines, failures := 0, 0
	var buf []byte
	for sc.Scan() {
		lines++
		line := sc.Text()
		hexBits, want, ok := strings.Cut(line, ",")
		if !ok {
			t.Fatalf("line %d: no comma: %q", lines, line)
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		fail := func(format string, args ...any) {
			failures++
			if failures <= 20 {
				t.Errorf("line %d (%s): %s", lines, line, fmt.Sprintf(format, args...))
			}
		}
		if got := canon.AppendNumber(buf[:0], math.Float64frombits(bits)); string(got) != want {
			fail("AppendNumber = %s", got)
		}
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			got, err := canon.Append(buf[:0], []byte(want), s)
			if err != nil {
				fail("%s: %v", s, err)
			} else if string(got) != want {
				fail("%s: canonical form %s", s, got)
			}
			buf = got
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != 100000 {
		t.Errorf("read %d lines, want 100000", lines)
	}
	if failures > 0 {
		t.Errorf("%d failures", failures)
	}
}
