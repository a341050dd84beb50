package cmd

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkey/idemkey/derive/post"
	"github.com/spf13/pflag"
)

// The request that post and probe send is described by curl's flags: -X,
// -H, -A, -u, -E/--key and a body flag. This file reads them and builds
// the request from them, once for both commands (each registers the flags
// with its own help text).

// loadRequestFlags reads and checks curl's request flags into o: the
// headers (each line is checked when the request is built), basic auth,
// the user agent, the client certificate and the method (POST, PUT or
// PATCH: an idempotency key belongs to a write).
func (o *postOptions) loadRequestFlags(fl *pflag.FlagSet) error {
	o.Headers, _ = fl.GetStringArray("header")
	o.User, _ = fl.GetString("user")
	o.UserAgent, _ = fl.GetString("user-agent")
	o.UserAgentSet = changed(fl, "user-agent")
	o.Transport.Cert, _ = fl.GetString("cert")
	o.Transport.Key, _ = fl.GetString("key")
	o.Transport.Getenv = o.f.IO.Getenv
	if o.User != "" && !strings.Contains(o.User, ":") {
		return usageErrorf("-u needs user:password (idemkey does not prompt)")
	}
	if o.Transport.Key != "" && o.Transport.Cert == "" {
		return usageErrorf("--key needs --cert")
	}
	if err := post.CheckHeaderText("-A", o.UserAgent); err != nil {
		return err
	}
	m, _ := fl.GetString("request")
	switch o.Method = strings.ToUpper(m); o.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return &UsageError{Err: fmt.Errorf("invalid -X %q (want POST, PUT or PATCH)", m),
			hint: "an idempotency key belongs to a request with a body that has a side effect"}
	}
	return nil
}

// newBaseRequest returns the request as curl's flags describe it, without
// its body and without the key: the method and URL, idemkey's User-Agent
// (or -A), Accept (application/json after --json), Content-Type:
// application/json, basic auth from -u, then each -H line in order.
func (o *postOptions) newBaseRequest() (*http.Request, error) {
	req, err := http.NewRequest(o.Method, o.URL.String(), nil)
	if err != nil {
		return nil, &post.Error{Code: post.CurlURLMalformat, Err: fmt.Errorf("invalid URL: %s", post.RedactText(post.RootCause(err), o.URL.String()))}
	}
	h := req.Header
	ua := "idemkey/" + versionString()
	if o.UserAgentSet {
		ua = o.UserAgent // -A '' sends none, as in curl
	}
	h["User-Agent"] = []string{ua}
	h.Set("Accept", "*/*")
	h.Set("Content-Type", "application/json")
	if o.Data.flag == "json" {
		h.Set("Accept", "application/json")
	}
	if o.User != "" {
		user, pass, _ := strings.Cut(o.User, ":")
		req.SetBasicAuth(user, pass)
	}
	for _, line := range o.Headers {
		if err := post.AddHeader(req, line, o.KeyHeader); err != nil {
			return nil, err
		}
	}
	return req, nil
}
