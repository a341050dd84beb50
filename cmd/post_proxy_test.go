package cmd

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPostProxyFromEnvironment: proxies are chosen as curl chooses them.
func TestPostProxyFromEnvironment(t *testing.T) {
	t.Parallel()
	var proxied atomic.Int32
	proxy := postLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		proxied.Add(1)
		io.WriteString(w, "via proxy "+r.RequestURI)
	})
	target := newIdemServer(t)
	for _, tc := range []struct {
		env     map[string]string
		viaProx bool
	}{
		{map[string]string{"HTTP_PROXY": proxy.URL}, false}, // httpoxy: upper case is ignored for http://
		{map[string]string{"http_proxy": proxy.URL}, true},  // loopback is not special
		{map[string]string{"http_proxy": strings.TrimPrefix(proxy.URL, "http://")}, true},
		{map[string]string{"ALL_PROXY": proxy.URL}, true},
		{map[string]string{"https_proxy": proxy.URL, "HTTPS_PROXY": proxy.URL}, false},
		{map[string]string{"http_proxy": proxy.URL, "no_proxy": "127.0.0.1"}, false},
		{map[string]string{"http_proxy": proxy.URL, "NO_PROXY": "example.com, 127.0.0.0/8"}, false},
		{map[string]string{"http_proxy": proxy.URL, "no_proxy": "*"}, false},
		{map[string]string{"http_proxy": proxy.URL, "no_proxy": "localhost,127.0.0.2"}, true},
	} {
		before := proxied.Load()
		var out, errb bytes.Buffer
		code := Main([]string{"post", target.URL + "/x", "--task", "t1", "--tool", "pay", "-d", postArgs},
			&IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string { return tc.env[k] }})
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.env, code, errb.String())
		}
		if got := proxied.Load() > before; got != tc.viaProx {
			t.Errorf("%v: through the proxy %v, want %v (stdout %q)", tc.env, got, tc.viaProx, out.String())
		}
		if tc.viaProx && out.String() != "via proxy "+target.URL+"/x" {
			t.Errorf("%v: stdout %q", tc.env, out.String())
		}
	}
	if !noProxy("example.com", "api.example.com") || noProxy("example.com", "notexample.com") || !noProxy(".example.com", "example.com") || !noProxy("::1", "::1") {
		t.Error("no_proxy matching")
	}
}
