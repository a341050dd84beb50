package post

import "testing"

// TestNoProxy: no_proxy matches a name and its subdomains (a leading dot
// optional), never a longer name that ends the same, and addresses.
func TestNoProxy(t *testing.T) {
	t.Parallel()
	if !noProxy("example.com", "api.example.com") || noProxy("example.com", "notexample.com") || !noProxy(".example.com", "example.com") || !noProxy("::1", "::1") {
		t.Error("no_proxy matching")
	}
}
