package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger"
)

// runReport is what one invocation of run did: -v's last line says it in
// words (so that a command's own exit 75, 76 or 125 is not read as
// idemkey's) and --json writes it as one object for a
// harness.
type runReport struct {
	// Action: ran (the command ran as an attempt), replayed (a recorded
	// result; reconciled ones too), busy (75), unknown (76), mismatch or
	// error (125, or 126/127 before any claim).
	Action string `json:"action"`
	Key    string `json:"key,omitempty"`
	Task   string `json:"task,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Ledger string `json:"ledger,omitempty"` // what may be shown of it
	// Attempt and State are the key's record as this invocation left it
	// (or found it: busy, unknown, replayed, mismatch).
	Attempt int64        `json:"attempt,omitempty"`
	State   ledger.State `json:"state,omitempty"`
	// ExitCode is idemkey's; CommandExitCode the command's own, when it
	// ran or was replayed.
	ExitCode        int  `json:"exit_code"`
	CommandExitCode *int `json:"command_exit_code,omitempty"`
	// Recorded: for ran, whether the outcome was recorded.
	Recorded  *bool            `json:"recorded,omitempty"`
	LeaseLost bool             `json:"lease_lost,omitempty"`
	Waited    bool             `json:"waited,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	Reconcile *reconcileReport `json:"reconcile,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// reconcileReport is the answer of a reconcile that ran.
type reconcileReport struct {
	Verdict string `json:"verdict"` // happened, not happened, undecided
	Note    string `json:"note,omitempty"`
}

func newReconcileReport(r *ledger.Reconciliation) *reconcileReport {
	if r == nil {
		return nil
	}
	return &reconcileReport{Verdict: r.Verdict.String(), Note: r.Note}
}

// record sets the report's record fields from rec.
func (r *runReport) record(action string, rec *ledger.Record) {
	if r == nil {
		return
	}
	r.Action = action
	if rec != nil {
		r.Attempt, r.State, r.Reason = rec.Attempt, rec.State, rec.Reason
	}
}

// ran notes the command's exit code and whether its outcome was recorded.
func (r *runReport) ran(code int, state ledger.State, reason string, recorded bool) {
	if r == nil {
		return
	}
	r.Action, r.CommandExitCode, r.Recorded, r.Reason = "ran", &code, &recorded, reason
	r.State = ""
	if recorded {
		r.State = state
	}
}

// openReport opens --json's file before the step runs, so that a path
// that cannot be written fails with nothing run.
func openReport(f *cli.Factory, name string) (io.WriteCloser, error) {
	switch name {
	case "":
		return nil, nil
	case "-":
		return nopCloser{f.IO.Err}, nil
	}
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, &cli.UsageError{Err: fmt.Errorf("--json: %v", err)}
	}
	return fh, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// finish completes the report with run's exit code and error, says it at
// -v, and writes --json.
func (r *runReport) finish(opts *Options, err error) {
	r.ExitCode = cli.ExitOK
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		r.ExitCode = ec.ExitCode()
	}
	var ee *cli.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.Error = err.Error()
	}
	if opts.Verbose && r.Key != "" {
		opts.logf("exit %d: %s", r.ExitCode, r.meaning())
	}
	if opts.JSON == nil {
		return
	}
	data, _ := json.Marshal(r)
	_, werr := opts.JSON.Write(append(data, '\n'))
	if cerr := opts.JSON.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		fmt.Fprintf(opts.f.IO.Err, "idemkey: warning: --json: %v\n", werr)
	}
}

func (r *runReport) recordedBool() bool { return r.Recorded != nil && *r.Recorded }

// meaning says whose exit code run's is.
func (r *runReport) meaning() string {
	switch r.Action {
	case "ran":
		if r.LeaseLost && r.ExitCode == cli.ExitUnknown && !r.recordedBool() {
			return fmt.Sprintf("idemkey's: lease lost, the command was killed; attempt %d not recorded", r.Attempt)
		}
		s := "the command's own exit code"
		if r.Recorded != nil && *r.Recorded {
			return fmt.Sprintf("%s; attempt %d recorded as %s", s, r.Attempt, r.State)
		}
		return fmt.Sprintf("%s; attempt %d not recorded", s, r.Attempt)
	case "replayed":
		return fmt.Sprintf("replayed: the recorded exit code of attempt %d (%s)", r.Attempt, r.State)
	case "busy":
		return "idemkey's: in progress elsewhere"
	case "unknown":
		return "idemkey's: outcome unknown"
	}
	return "idemkey's: it failed"
}
