package ledgeropts

import (
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// HoldFlag is one of the flags of a hold a face declares (Wait, Lease or
// Retain), with its default and help line: the shared ones, or the face's
// own where they say something of that face (Default, Help).
type HoldFlag struct {
	name, value, usage string
}

// The flags of a hold, with their shared defaults and help lines.
var (
	// Wait is --wait: how long to wait for an attempt running elsewhere.
	Wait = HoldFlag{"wait", "0s", "wait up to this long for a running attempt elsewhere to end, then act on its outcome"}
	// Lease is --lease: of a claim on shared stores, at least 3ms.
	Lease = HoldFlag{"lease", "30s", "lease of a running attempt on shared stores (renewed every third)"}
	// Retain is --retain: finished records older than it are ignored.
	Retain = HoldFlag{"retain", "7d", "ignore finished records older than this (0: keep them)"}
)

// Default returns the flag with the face's own default value.
func (h HoldFlag) Default(value string) HoldFlag {
	h.value = value
	return h
}

// Help returns the flag with the face's own help line.
func (h HoldFlag) Help(usage string) HoldFlag {
	h.usage = usage
	return h
}

// AddHoldFlags declares the flags of a hold the face takes, in the order
// given (post's help lists its flags unsorted).
func AddHoldFlags(fl *pflag.FlagSet, which ...HoldFlag) {
	for _, h := range which {
		fl.String(h.name, h.value, h.usage)
	}
}

// HoldDurations is the settings of a hold HoldSettings read: a setting not
// asked for is 0.
type HoldDurations struct {
	Wait   time.Duration // --wait: for an attempt running elsewhere
	Lease  time.Duration // --lease: of the claim, renewed every third of it
	Retain time.Duration // --retain: older finished records are ignored (0: kept)
}

// HoldSettings reads the settings of a hold the face declared, named in
// which (flag, IDEMKEY_WAIT, IDEMKEY_LEASE, IDEMKEY_RETAIN or the config
// file): --wait and --lease a duration or seconds, --retain one that may
// be in days. Each that does not parse is an error naming its source,
// then a lease under 3ms (it is renewed every third of it). Only the
// settings named are read: a face does not fail on one it ignores.
func HoldSettings(v *settings.Settings, which ...HoldFlag) (HoldDurations, error) {
	var h HoldDurations
	for _, f := range which {
		var err error
		switch f.name {
		case Wait.name:
			h.Wait, err = durationSetting(v.GetString(f.name))
		case Lease.name:
			h.Lease, err = durationSetting(v.GetString(f.name))
		case Retain.name:
			h.Retain, err = cli.ParseDays(v.GetString(f.name))
		}
		if err != nil {
			return HoldDurations{}, v.Unparsable(f.name, err)
		}
	}
	for _, f := range which {
		if f.name == Lease.name && h.Lease < 3*time.Millisecond {
			return HoldDurations{}, v.OutOfRange(f.name, "a lease is at least 3ms (renewed every third of it)")
		}
	}
	return h, nil
}

// durationSetting parses a duration setting: a Go duration, or seconds.
func durationSetting(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return cli.ParseDays(s)
}

// RecoverPolicy is --recover if given, else the tool's
// tools.NAME.recover in the config file, else recover from the
// environment (IDEMKEY_RECOVER) or the config, else fail.
func RecoverPolicy(f *cli.Factory, cmd *cobra.Command, tool string) (ledger.Policy, error) {
	return RecoverPolicyOf(f, cmd.Flags(), tool)
}

// RecoverPolicyOf is RecoverPolicy for the flags fl (post reads it once
// the call's tool is known).
func RecoverPolicyOf(f *cli.Factory, fl *pflag.FlagSet, tool string) (ledger.Policy, error) {
	v := f.Config
	if !cli.Changed(fl, "recover") && tool != "" && v.GetString("tools."+tool+".recover") != "" {
		t, err := v.ForTool(tool)
		if err != nil {
			return "", err
		}
		v = t
	}
	p := ledger.Policy(v.GetString("recover"))
	if !p.Valid() {
		return "", v.Invalid("recover", "want fail or retry")
	}
	return p, nil
}
