package canon_test

import (
	"reflect"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

func TestLosses(t *testing.T) {
	t.Parallel()
	type loss struct {
		Kind          canon.LossKind
		Pointer       string
		Input, Output string
	}
	for _, tc := range []struct {
		in   string
		want []loss
	}{
		// Lossless: order, white space, spellings of the same number, escapes.
		{`{"b": 1.0, "a": [1e2, 1E+2, 100.000, -0, 0.0e-5, 0.1, 5e-324, 9007199254740992, "\u00e9"]}`, nil},
		{`{"n": 1234567890123456789012345678.9e-9}`, []loss{{canon.LossNumber, "/n", "1234567890123456789012345678.9e-9", "1234567890123456800"}}},
		{`{"id": 1234567890123456789, "ok": 1}`, []loss{{canon.LossNumber, "/id", "1234567890123456789", "1234567890123456800"}}},
		{`[9007199254740993]`, []loss{{canon.LossNumber, "/0", "9007199254740993", "9007199254740992"}}},
		{`{"x": {"y": [1e400, -1e999999999999999999999]}}`, []loss{
			{canon.LossOverflow, "/x/y/0", "1e400", "null"},
			{canon.LossOverflow, "/x/y/1", "-1e999999999999999999999", "null"}}},
		{`[1e-400, 0e999999999999999999999]`, []loss{{canon.LossNumber, "/0", "1e-400", "0"}}},
		{`[0.30000000000000000001]`, []loss{{canon.LossNumber, "/0", "0.30000000000000000001", "0.3"}}},
		{`{"a": 1, "b": {"c": 2, "c": 3}, "a": {"z": 1, "z": 2}}`, []loss{
			{canon.LossDuplicate, "/a", "1", `{"z": 1, "z": 2}`},
			{canon.LossDuplicate, "/b/c", "2", "3"},
			{canon.LossDuplicate, "/a/z", "1", "2"}}},
		// A repeated name inside a dropped value is that value's loss.
		{`{"a": {"z": 1, "z": 2}, "a": 0}`, []loss{{canon.LossDuplicate, "/a", `{"z": 1, "z": 2}`, "0"}}},
		{`{"a~/b": 1, "a~/b": 1}`, []loss{{canon.LossDuplicate, "/a~0~1b", "1", "1"}}},
	} {
		d, err := canon.Parse([]byte(tc.in), canon.JS)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		var got []loss
		for _, l := range d.Root().Losses(0) {
			got = append(got, loss{l.Kind, l.Pointer, l.Input, l.Output})
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	// The limit, and a node inside a document: pointers are relative to it.
	d, _ := canon.Parse([]byte(`{"args": {"a": [1e400, 1e401]}, "b": 1e402}`), canon.JS)
	args, _ := d.Root().Get("args")
	if ls := args.Losses(1); len(ls) != 1 || ls[0].Pointer != "/a/0" {
		t.Errorf("Losses(1) of args: %+v", ls)
	}
}
