package cmd

import (
	"strings"
	"testing"
	"time"
)

// TestFleetPostLeaseRenewed: post --ledger on a shared store holds the key
// for as long as its request takes, past its lease: the lease is renewed,
// so a second machine that starts the same request meanwhile exits 75 and
// sends nothing, instead of taking the key over as if the first had died
// and sending the request again while the first is still in flight.
func TestFleetPostLeaseRenewed(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		o := newPlanOwner(t, 0) // the first request stalls until released
		fl := newFleet(t, s, nil)
		args := []string{"post", o.URL + "/pay", "--task", "t-lease", "--tool", "pay", "-d", `{"amount":100}`,
			"--ledger=" + s.url, "--lease", "300ms"}
		a := fl.start("a", args...)
		select {
		case <-o.arrived:
		case <-a.done:
			t.Fatalf("the first post ended before its request arrived: exit %d:\n%s", a.code, a.stderr.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("the first request never arrived:\n%s", a.stderr.String())
		}
		time.Sleep(time.Second) // more than three leases
		b := fl.run("b", args...)
		if b.code != exitBusy || o.total() != 1 || !strings.Contains(b.stderr.String(), "in flight elsewhere") {
			t.Fatalf("while the first is in flight past its lease: exit %d, %d requests:\n%s", b.code, o.total(), b.stderr.String())
		}
		close(o.release)
		if code := a.wait(t, 30*time.Second); code != 0 || a.stdout.String() != `{"request":1,"status":201}`+"\n" {
			t.Fatalf("first: exit %d, stdout %q:\n%s", code, a.stdout.String(), a.stderr.String())
		}
		c := fl.run("c", args...)
		if c.code != 0 || c.stdout.String() != a.stdout.String() || o.total() != 1 || !strings.Contains(c.stderr.String(), "replayed from the ledger") {
			t.Fatalf("after it: exit %d, stdout %q, %d requests:\n%s", c.code, c.stdout.String(), o.total(), c.stderr.String())
		}
	})
}
