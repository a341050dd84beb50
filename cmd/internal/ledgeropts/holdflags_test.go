package ledgeropts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// holdSettings declares the flags of a hold as run does, loads the
// settings from args, env (IDEMKEY_*) and the config file's text (none
// when empty), and reads the settings named in which.
func holdSettings(t *testing.T, args []string, env map[string]string, file string, which ...HoldFlag) (HoldDurations, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "hold"}
	fl := cmd.Flags()
	fl.String("color", "auto", "")
	fl.String("config", "", "")
	AddHoldFlags(fl, Wait, Lease, Retain)
	if file != "" {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	names := func() map[string]settings.Scope {
		return map[string]settings.Scope{"wait": settings.TopLevel, "lease": settings.TopLevel, "retain": settings.TopLevel}
	}
	v, err := settings.Load(cmd, func(k string) string { return env[k] }, names, func(string) {})
	if err != nil {
		t.Fatalf("loading %q: %v", args, err)
	}
	return HoldSettings(v, which...)
}

// TestHoldSettings: the settings of a hold parse as durations (or seconds;
// --retain in days too) from the flag, IDEMKEY_* or the config file, and
// each value that does not parse, and a lease under 3ms, is the error the
// faces give, naming its source.
func TestHoldSettings(t *testing.T) {
	all := []HoldFlag{Wait, Lease, Retain}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want HoldDurations
	}{
		{nil, nil, HoldDurations{Wait: 0, Lease: 30 * time.Second, Retain: 7 * 24 * time.Hour}},
		{[]string{"--wait", "2m", "--lease", "3ms", "--retain", "1.5d"}, nil, HoldDurations{Wait: 2 * time.Minute, Lease: 3 * time.Millisecond, Retain: 36 * time.Hour}},
		{[]string{"--wait", "0.5", "--lease", "10", "--retain", "0"}, nil, HoldDurations{Wait: 500 * time.Millisecond, Lease: 10 * time.Second, Retain: 0}},
		{nil, map[string]string{"IDEMKEY_WAIT": "1s", "IDEMKEY_LEASE": "1m", "IDEMKEY_RETAIN": "36h"}, HoldDurations{Wait: time.Second, Lease: time.Minute, Retain: 36 * time.Hour}},
	} {
		got, err := holdSettings(t, c.args, c.env, "", all...)
		if err != nil || got != c.want {
			t.Errorf("%q %v: %+v, %v; want %+v", c.args, c.env, got, err, c.want)
		}
	}

	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--wait", "soon"}, nil, `invalid --wait: invalid duration "soon" (e.g. 7d, 36h, 90m)`},
		{[]string{"--lease", "-3s"}, nil, `invalid --lease: invalid duration "-3s" (e.g. 7d, 36h, 90m)`},
		{[]string{"--lease", "0"}, nil, `invalid --lease "0": a lease is at least 3ms (renewed every third of it)`},
		{[]string{"--lease", "2ms"}, nil, `invalid --lease "2ms": a lease is at least 3ms (renewed every third of it)`},
		{[]string{"--retain", "1000000d"}, nil, `invalid --retain: invalid duration "1000000d": too long`},
		{[]string{"--retain", "-1d"}, nil, `invalid --retain: invalid duration "-1d"`},
		{nil, map[string]string{"IDEMKEY_LEASE": "1ms"}, `invalid IDEMKEY_LEASE "1ms": a lease is at least 3ms (renewed every third of it)`},
		{nil, map[string]string{"IDEMKEY_WAIT": "soon"}, `invalid IDEMKEY_WAIT: invalid duration "soon" (e.g. 7d, 36h, 90m)`},
		// A value that does not parse is reported before a lease too short.
		{[]string{"--lease", "0", "--retain", "forever"}, nil, `invalid --retain: invalid duration "forever" (e.g. 7d, 36h, 90m)`},
	} {
		got, err := holdSettings(t, c.args, c.env, "", all...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q %v: %+v, %v; want the error %q", c.args, c.env, got, err, c.want)
		}
		if got != (HoldDurations{}) {
			t.Errorf("%q %v: %+v with an error", c.args, c.env, got)
		}
	}

	// From the config file, the error names the file, its line and the setting.
	_, err := holdSettings(t, nil, nil, "wait: 1s\nlease: \"0\"\n", all...)
	if err == nil || !strings.HasSuffix(err.Error(), `config.yaml:2: lease: invalid value "0": a lease is at least 3ms (renewed every third of it)`) {
		t.Errorf("a config file's lease of 0: %v", err)
	}
	_, err = holdSettings(t, nil, nil, "retain: soon\n", all...)
	if err == nil || !strings.HasSuffix(err.Error(), `config.yaml:1: retain: invalid duration "soon" (e.g. 7d, 36h, 90m)`) {
		t.Errorf("a config file's retain of soon: %v", err)
	}

	// Only the settings named are read: ledger reconcile (--lease) does not
	// fail on the --retain it inherits and ignores, nor ledger's others
	// (--retain) on IDEMKEY_LEASE.
	got, err := holdSettings(t, []string{"--retain", "forever", "--wait", "soon"}, nil, "", Lease)
	if err != nil || got != (HoldDurations{Lease: 30 * time.Second}) {
		t.Errorf("--lease only, with --retain and --wait unparsable: %+v, %v", got, err)
	}
	got, err = holdSettings(t, nil, map[string]string{"IDEMKEY_LEASE": "0"}, "", Retain)
	if err != nil || got != (HoldDurations{Retain: 7 * 24 * time.Hour}) {
		t.Errorf("--retain only, with IDEMKEY_LEASE=0: %+v, %v", got, err)
	}
}

// TestAddHoldFlags: the flags of a hold are declared with the shared
// default and help line, or the face's own, in the order given.
func TestAddHoldFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "hold"}
	fl := cmd.Flags()
	fl.SortFlags = false
	AddHoldFlags(fl, Wait.Default("60s").Help("wait for a call"), Lease, Retain.Help("ignore old records"))
	for _, c := range []struct{ name, value, usage string }{
		{"wait", "60s", "wait for a call"},
		{"lease", "30s", "lease of a running attempt on shared stores (renewed every third)"},
		{"retain", "7d", "ignore old records"},
	} {
		f := fl.Lookup(c.name)
		if f == nil || f.DefValue != c.value || f.Usage != c.usage || f.Value.Type() != "string" {
			t.Errorf("--%s: %+v, want default %q and help %q", c.name, f, c.value, c.usage)
		}
	}
	var order []string
	fl.VisitAll(func(f *pflag.Flag) { order = append(order, f.Name) })
	if want := []string{"wait", "lease", "retain"}; !slices.Equal(order, want) {
		t.Errorf("declared %q, want %q", order, want)
	}
	if Wait.value != "0s" || Wait.usage != "wait up to this long for a running attempt elsewhere to end, then act on its outcome" {
		t.Errorf("Default and Help changed the shared Wait: %+v", Wait)
	}
}
