package probe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxKept is how much of a response body is kept for its "id" and for
// the evidence; the rest is only hashed, so that a huge or endless body
// costs time (bounded by MaxTime) but not memory.
const maxKept = 1 << 20

// response is what one request got back.
type response struct {
	key    string // the key it was sent with ("" for none)
	status int
	header http.Header
	body   []byte // the first maxKept bytes
	size   int64  // the whole body's length
	sum    [32]byte
	at     time.Time // when it arrived
}

// accepted reports whether the endpoint took the request: a 2xx, or 303
// See Other (created; see there). A redirect to follow (301, 302, 307,
// 308) is not an answer: the probe does not follow it, and its Location
// would pass for a replay's identity.
func (r *response) accepted() bool { return r.status < 300 || r.status == 303 }

// redirected reports whether the response is a redirect to follow.
func (r *response) redirected() bool { return r.status >= 300 && r.status < 400 && r.status != 303 }

// send sends one request with key ("" sends none) and body, and reads the
// whole response.
func (p *prober) send(ctx context.Context, rule, key string, body []byte) (*response, error) {
	if p.cfg.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.MaxTime)
		defer cancel()
	}
	req := p.cfg.Request.Clone(ctx)
	req.Header.Del(p.cfg.KeyHeader)
	if key != "" {
		req.Header.Set(p.cfg.KeyHeader, key)
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	sent := int(p.sent.Add(1)) - 1
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, &SendError{Rule: rule, Sent: sent, Err: err}
	}
	defer resp.Body.Close()
	r := &response{key: key, status: resp.StatusCode, header: resp.Header}
	h := sha256.New()
	kept, err := io.ReadAll(io.LimitReader(io.TeeReader(resp.Body, h), maxKept))
	var rest int64
	if err == nil {
		rest, err = io.Copy(h, resp.Body) // hashed, not kept
	}
	if err != nil {
		return nil, &SendError{Rule: rule, Sent: sent, Err: err, InBody: true}
	}
	r.body, r.size, r.at = kept, int64(len(kept))+rest, time.Now()
	h.Sum(r.sum[:0])
	return r, nil
}

// identity is what tells one effect's response from another's: the JSON
// body's "id" member, else the Location header, else the whole body.
type identity struct {
	kind  string // "id", "Location" or "body"
	value string // the id's JSON text, the Location, or the body's SHA-256
}

func (r *response) identity() identity {
	if id, ok := jsonID(r); ok {
		return identity{"id", id}
	}
	if loc := r.header.Get("Location"); loc != "" {
		return identity{"Location", loc}
	}
	return identity{"body", hex.EncodeToString(r.sum[:])}
}

// jsonID returns the JSON text of the top-level "id" member of a JSON
// object body, when it is a string or a number.
func jsonID(r *response) (string, bool) {
	if r.size != int64(len(r.body)) {
		return "", false // not kept whole
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(r.body, &obj) != nil {
		return "", false
	}
	raw := bytes.TrimSpace(obj["id"])
	if len(raw) == 0 || (raw[0] != '"' && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", false
	}
	return string(raw), true
}

// describeIdentity describes the identity for the evidence: `id "ch_1"`, `id 7`,
// `Location "/charges/7"`, or the body's size.
func (r *response) describeIdentity() string {
	id := r.identity()
	switch id.kind {
	case "id":
		if id.value[0] == '"' {
			var s string
			if json.Unmarshal([]byte(id.value), &s) == nil {
				return "id " + quote(s)
			}
		}
		return "id " + quote(id.value)
	case "Location":
		return "Location " + quote(id.value)
	}
	return fmt.Sprintf("a body of %d bytes", r.size)
}

// quote makes a server's text safe to show: quoted, escaped, and cut to
// 60 bytes.
func quote(s string) string {
	if len(s) > 60 {
		s = strings.ToValidUTF8(s[:60], "") + "…"
	}
	return strconv.Quote(s)
}

// statusText is "201 Created"; a code Go does not know is shown alone.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return strconv.Itoa(code)
}

// replayedHeader returns, as it came, the first response header whose
// name speaks of a replay (Idempotent-Replayed, Idempotency-Replayed,
// X-Idempotent-Replay…), or "".
func replayedHeader(h http.Header) string {
	names := make([]string, 0, len(h))
	for name := range h {
		if strings.Contains(strings.ToLower(name), "replay") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return names[0] + ": " + quote(h.Get(names[0]))
}

// tally summarizes statuses: "201 Created ×1, 409 Conflict ×4".
func tally(rs []*response) string {
	n := map[int]int{}
	var codes []int
	for _, r := range rs {
		if n[r.status] == 0 {
			codes = append(codes, r.status)
		}
		n[r.status]++
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s ×%d", statusText(c), n[c])
	}
	return strings.Join(parts, ", ")
}
