package post

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// RequestHead returns the request head as Go's client writes it for req
// (with the connection closed after it, as every attempt's is), for
// --dry-run and for -v when the bytes were not recorded.
func RequestHead(req *http.Request, body []byte) []byte {
	r := req.Clone(context.Background())
	if u := r.URL.User; u != nil && r.Header.Get("Authorization") == "" {
		pass, _ := u.Password()
		r.SetBasicAuth(u.Username(), pass)
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return nil
	}
	head := b.Bytes()
	if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
		// The transport, whose keep-alives are off, adds Connection:
		// close after every other header (Request.Close would put it
		// among the first).
		head = append(head[:i+2:i+2], "Connection: close\r\n\r\n"...)
	}
	return head
}

// HeadLines splits a head into its lines without line ends; the first is
// the start line.
func HeadLines(head []byte) []string {
	s := strings.TrimRight(string(head), "\r\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// synthHead writes a response head from a parsed response, for when the
// bytes were not recorded (HTTPS through a proxy): headers sorted.
func synthHead(resp *http.Response) []byte {
	var b []byte
	b = fmt.Appendf(b, "%s %s\r\n", resp.Proto, resp.Status)
	for _, name := range sortedKeys(resp.Header) {
		for _, v := range resp.Header[name] {
			b = fmt.Appendf(b, "%s: %s\r\n", name, v)
		}
	}
	return append(b, "\r\n"...)
}

// sortedKeys returns a header's names in order.
func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
