package post_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/post"
)

// postView is what a test checks of post's options: the request, the
// key's call and form, the output and the retries.
type postView struct {
	URL, Method, Body             string
	Headers                       []string
	KeyHeader                     string
	KeyQuoted                     bool
	Task, Tool, From              string
	Omit                          []string
	Format, Prefix                string
	Output                        string
	Include, Silent, Fail, DryRun bool
	SendAsIs, Insecure, WriteOut  bool
	Retry                         int
	RetryDelay, MaxTime           time.Duration
	ConnectTimeout                time.Duration
}

// TestPostOptions: post's flags, IDEMKEY_* variables and config file
// become its options through NewCmd's runF seam, nothing sent; what
// changes what is sent, or how securely, comes from the command line
// only (IDEMKEY_INSECURE is not read), and two body flags are refused
// before anything runs.
func TestPostOptions(t *testing.T) {
	view := func(o *post.Options) postView {
		v := postView{Method: o.Method, Body: o.Data.Flag + " " + o.Data.Value, Headers: o.Headers, KeyHeader: o.KeyHeader, KeyQuoted: o.KeyQuoted,
			Task: o.Spec.Task, Tool: o.Spec.Tool, From: o.Spec.From, Omit: o.Spec.Omit, Format: o.Key.Format.Name, Prefix: o.Key.Format.Prefix,
			Output: o.Output, Include: o.Include, Silent: o.Silent, Fail: o.Fail, DryRun: o.DryRun, SendAsIs: o.SendAsIs,
			Insecure: o.Transport.Insecure, WriteOut: o.WriteOut != nil, Retry: o.Retry, RetryDelay: o.RetryDelay, MaxTime: o.MaxTime,
			ConnectTimeout: o.Transport.ConnectTimeout}
		if o.URL != nil {
			v.URL = o.URL.String()
		}
		return v
	}
	clitest.CheckOptions(t, post.NewCmd, view, []clitest.OptionsCase[postView]{
		{Name: "flags", Args: []string{"post", "https://api.example.com/v1/charges", "--task", "t-42", "--tool", "charge", "-d", "@args.json",
			"-X", "PUT", "-H", "Authorization: Bearer t", "--retry", "5", "--retry-delay", "0.5", "-m", "20", "-f", "-s", "-i", "-o", "body.out",
			"--omit", "/ts", "--format", "uuid", "--key-quoted", "-w", "%{http_code}\n", "-k"},
			Want: postView{URL: "https://api.example.com/v1/charges", Method: "PUT", Body: "data @args.json", Headers: []string{"Authorization: Bearer t"},
				KeyHeader: "Idempotency-Key", KeyQuoted: true, Task: "t-42", Tool: "charge", From: "args", Omit: []string{"/ts"}, Format: "uuid",
				Output: "body.out", Include: true, Silent: true, Fail: true, Insecure: true, WriteOut: true, Retry: 5,
				RetryDelay: 500 * time.Millisecond, MaxTime: 20 * time.Second, ConnectTimeout: 300 * time.Second}},
		{Name: "variables and the config file, a flag first", Env: map[string]string{"IDEMKEY_TASK": "t-env", "IDEMKEY_TOOL": "pay", "IDEMKEY_RETRY": "3",
			"IDEMKEY_INSECURE": "true", "IDEMKEY_SEND_AS_IS": "true"},
			Config: "format: base64url\nprefix: pay-\nkey-header: X-Idempotency-Key\nretry: 7\nconnect-timeout: 4\n",
			Args:   []string{"post", "localhost:8080/pay", "--json", `{"a":1}`, "--from", "openai", "--dry-run", "--format", "hex"},
			Want: postView{URL: "http://localhost:8080/pay", Method: "POST", Body: `json {"a":1}`, KeyHeader: "X-Idempotency-Key", Task: "t-env", Tool: "pay",
				From: "openai", Format: "hex", Prefix: "pay-", DryRun: true, Retry: 3, RetryDelay: time.Second, ConnectTimeout: 4 * time.Second}},
		{Name: "two bodies", Args: []string{"post", "localhost:8080/pay", "--task", "t", "--tool", "x", "-d", "{}", "--data-raw", "{}"}, Code: 2,
			Stderr: "more than one body: --data and --data-raw"},
	})
}
