package post_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/post"
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
		o := clitest.Streams{Env: tc.env}.Run(t, "post", target.URL+"/x", "--task", "t1", "--tool", "pay", "-d", postArgs)
		code := o.Code
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.env, code, o.Stderr)
		}
		if got := proxied.Load() > before; got != tc.viaProx {
			t.Errorf("%v: through the proxy %v, want %v (stdout %q)", tc.env, got, tc.viaProx, o.Stdout)
		}
		if tc.viaProx && o.Stdout != "via proxy "+target.URL+"/x" {
			t.Errorf("%v: stdout %q", tc.env, o.Stdout)
		}
	}
}

// TestPostProxyUnresolvable: a proxy whose name does not resolve is curl's
// 5 (could not resolve proxy), not 6, which says the server's name did
// not. The name a..b is refused by the resolver without a query.
func TestPostProxyUnresolvable(t *testing.T) {
	t.Parallel()
	target := newIdemServer(t)
	for _, env := range []map[string]string{
		{"http_proxy": "http://user:pw@a..b:3128"},
		{"all_proxy": "a..b:3128"},
	} {
		o := clitest.Streams{Env: env}.Run(t, "post", target.URL+"/x", "--task", "t1", "--tool", "pay", "-d", postArgs)
		code := o.Code
		if code != post.CurlResolveProxy || len(o.Stdout) != 0 ||
			!strings.Contains(o.Stderr, "idemkey: error: (5) could not resolve proxy a..b") || strings.Contains(o.Stderr, "pw") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", env, code, o.Stdout, o.Stderr)
		}
	}
	if n := len(target.seen()); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

// TestPostProxyRefusesTunnel: a proxy that answers CONNECT with an error
// is curl's 56 "CONNECT tunnel failed, response N"; nothing reached the
// server, and a definitive 4xx from the proxy (407, 403) is not retried,
// while a 503 (the proxy could not reach the server) is.
func TestPostProxyRefusesTunnel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status   string
		attempts int32
	}{
		{"407 Proxy Authentication Required", 1},
		{"403 Forbidden", 1},
		{"503 Service Unavailable", 3},
	} {
		resp := "HTTP/1.1 " + tc.status + "\r\nContent-Length: 0\r\n\r\n"
		proxy, n := postRawServer(t, func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, resp) })
		env := map[string]string{"https_proxy": proxy}
		o := clitest.Streams{Env: env}.Run(t, "post", "https://127.0.0.1:1/x", "--task", "t1", "--tool", "pay", "-d", postArgs,
			"--retry", "2", "--retry-delay", "0.01")
		code := o.Code
		want := "idemkey: error: (56) CONNECT tunnel failed, response " + tc.status[:3] + "\n"
		if code != post.CurlRecvError || len(o.Stdout) != 0 || !strings.HasSuffix(o.Stderr, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.status, code, o.Stdout, o.Stderr)
		}
		if got := n.Load(); got != tc.attempts {
			t.Errorf("%s: %d CONNECTs, want %d", tc.status, got, tc.attempts)
		}
	}
}

// TestPostProxyRefusesConnection: a proxy that is down is curl's 7, and the
// message names the proxy and its address (it said "failed to connect:
// connection refused", as if the server were down).
func TestPostProxyRefusesConnection(t *testing.T) {
	t.Parallel()
	target := newIdemServer(t)
	down := postClosedPort(t)
	addr := down
	for _, u := range []string{target.URL + "/x", "https://127.0.0.1:1/x"} {
		env := map[string]string{"http_proxy": down, "https_proxy": down}
		o := clitest.Streams{Env: env}.Run(t, "post", u, "--task", "t1", "--tool", "pay", "-d", postArgs)
		code := o.Code
		want := "idemkey: error: (7) failed to connect to the proxy " + addr + ": connection refused\n"
		if code != post.CurlConnect || len(o.Stdout) != 0 || o.Stderr != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, want %q", u, code, o.Stdout, o.Stderr, want)
		}
	}
	if n := len(target.seen()); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}
