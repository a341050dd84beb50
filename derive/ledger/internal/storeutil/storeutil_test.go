package storeutil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p%40ss-word@h:5432/db?sslmode=require": "postgres://u:xxxxx@h:5432/db?sslmode=require",
		"postgres://h/db?user=u&password=open-sesame":        "postgres://h/db?user=u&password=xxxxx",
		// An allow-list: a TLS key's passphrase, and any parameter
		// idemkey does not know, are hidden; a fragment is a "#" typed
		// in a password.
		"postgres://u@h/db?sslmode=verify-full&sslpassword=tls-pass&sslkey=/k.pem": "postgres://u@h/db?sslmode=verify-full&sslpassword=xxxxx&sslkey=/k.pem",
		"postgres://h/db?table=t&apitoken=tok3n&connect_timeout=5":                 "postgres://h/db?table=t&apitoken=xxxxx&connect_timeout=5",
		"redis://h/0?dial_timeout=1s&ttl=24h&credential=zz9&prefix=p":              "redis://h/0?dial_timeout=1s&ttl=24h&credential=xxxxx&prefix=p",
		"postgres://u:pa@h/db#ss-rest":                                             "postgres://u:xxxxx@h/db#xxxxx",
		"postgres://h/db?sslpassword=%zzsecret":                                    "postgres://h/db?xxxxx",
		"redis://:hunter2@127.0.0.1:6379/0":                                        "redis://:xxxxx@127.0.0.1:6379/0",
		"rediss://127.0.0.1:6380/1?prefix=a:":                                      "rediss://127.0.0.1:6380/1?prefix=a:",
		// A password with a space, typed unescaped: unparsable, and
		// nothing of it is shown (the text after the space was).
		"redis://:pw1 secret23@h/0":                   "(an unparsable URL)",
		"postgres://u:pw1 secret23@h/db":              "(an unparsable URL)",
		"postgres://u@h/db?password=pw1 secret23&x=1": "postgres://u@h/db?password=xxxxx&x=xxxxx",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactErr(t *testing.T) {
	url := "postgres://u:p%40ss-word@h/db?password=second-secret"
	base := errors.New("dial p@ss-word failed:\n\tfor p%40ss-word and second-secret")
	err := RedactErr(base, Secrets(url))
	if strings.Contains(err.Error(), "ss-word") || strings.Contains(err.Error(), "second-secret") {
		t.Fatalf("secret left: %q", err)
	}
	if strings.ContainsAny(err.Error(), "\n\t") {
		t.Fatalf("not one line: %q", err)
	}
	if !errors.Is(err, base) {
		t.Fatal("the original error is lost")
	}
	tls := "postgres://h/db?sslpassword=tls-pass&sslmode=require&x=unknown-val"
	msg := RedactErr(errors.New("cannot decrypt key with tls-pass (x=unknown-val, sslmode=require)"), Secrets(tls)).Error()
	if strings.Contains(msg, "tls-pass") || strings.Contains(msg, "unknown-val") || !strings.Contains(msg, "require") {
		t.Fatalf("sslpassword and unknown values not hidden, or an allowed one hidden: %q", msg)
	}
	if RedactErr(nil, nil) != nil {
		t.Fatal("nil became an error")
	}
}

func TestSame(t *testing.T) {
	now := time.Now()
	a := &ledger.Record{Key: "k", Attempt: 2, State: ledger.Succeeded, Holder: "h pid 1", StartedAt: now, EndedAt: now}
	b := *a
	b.StartedAt = now.Add(300 * time.Microsecond) // the store's precision
	if !Same(&b, a) {
		t.Fatal("a record stored with microsecond precision is not the same")
	}
	for _, change := range []func(r *ledger.Record){
		func(r *ledger.Record) { r.Attempt = 3 },
		func(r *ledger.Record) { r.State = ledger.Failed },
		func(r *ledger.Record) { r.Holder = "h pid 2" },
		func(r *ledger.Record) { r.EndedAt = now.Add(time.Second) },
	} {
		c := *a
		change(&c)
		if Same(&c, a) {
			t.Errorf("%+v taken for %+v", c, *a)
		}
	}
	if Same(nil, a) {
		t.Error("no record taken for one")
	}
}
