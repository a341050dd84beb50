package probe

import (
	"context"
	"fmt"
	"strings"
)

// format is one of the key formats idemkey sends (--format), as tried by
// key-limits.
type format struct {
	name  string
	flag  string // idemkey's --format value
	shape shape
	key   string
	r     *response
}

// keyLimits sends a UUID, a hex SHA-256 and a base64url key, then finds
// the longest key accepted, up to MaxKeyLen characters: one request of
// MaxKeyLen, and when it is refused, a binary search below it (at most 8
// more). A key is accepted when its response is not an error (below
// 400). It returns the shape of key the other rules send: a prefixed key
// where one as long is accepted, else the first format accepted.
func (p *prober) keyLimits(ctx context.Context) (Result, shape, error) {
	formats := []format{
		{name: "UUID", flag: "uuid", shape: shapeUUID, key: p.keys.uuid()},
		{name: "hex SHA-256", flag: "hex", shape: shapeHex, key: p.keys.hex()},
		{name: "base64url SHA-256", flag: "base64url", shape: shapeBase64URL, key: p.keys.base64url()},
	}
	for i := range formats {
		r, err := p.send(ctx, KeyLimits, formats[i].key, p.cfg.Body)
		if err != nil {
			return Result{}, shapeNone, err
		}
		formats[i].r = r
	}
	longest, refused, err := p.longestKey(ctx)
	if err != nil {
		return Result{}, shapeNone, err
	}
	s := shapeNone
	if longest >= defaultKeyLen {
		s = shapePrefixed
	}
	var ok, no []string
	var use string
	for _, f := range formats {
		if f.r.accepted() {
			ok = append(ok, f.name)
			if s == shapeNone {
				s = f.shape
			}
			if use == "" {
				use = f.flag
			}
		} else {
			no = append(no, fmt.Sprintf("%s (%s)", f.name, statusText(f.r.status)))
		}
	}
	ev := describeLongest(longest, refused)
	res := Result{Rule: KeyLimits}
	switch {
	case len(no) == 0:
		res.Verdict, res.Evidence = Pass, ev+"; UUID, hex SHA-256 and base64url keys accepted"
	case len(ok) == 0:
		res.Verdict, res.Evidence = Fail, ev+"; none of idemkey's key formats accepted: "+strings.Join(no, ", ")+" refused"
		if r := formats[0].r; r.redirected() {
			res.Evidence += fmt.Sprintf("; the endpoint redirects to %s: probe that URL", quote(r.header.Get("Location")))
		}
	default:
		res.Verdict, res.Evidence = Info, fmt.Sprintf("%s; %s accepted, %s refused: send keys with idemkey --format %s",
			ev, strings.Join(ok, " and "), strings.Join(no, " and "), use)
	}
	return res, s, nil
}

// longestKey returns the length of the longest key accepted (0 for none)
// and the response to the shortest one refused (nil when MaxKeyLen was
// accepted).
func (p *prober) longestKey(ctx context.Context) (int, *response, error) {
	r, err := p.send(ctx, KeyLimits, p.keys.ofLen(MaxKeyLen), p.cfg.Body)
	if err != nil || r.accepted() {
		return MaxKeyLen, nil, err
	}
	lo, hi, refused := 0, MaxKeyLen, r
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		r, err := p.send(ctx, KeyLimits, p.keys.ofLen(mid), p.cfg.Body)
		if err != nil {
			return 0, nil, err
		}
		if r.accepted() {
			lo = mid
		} else {
			hi, refused = mid, r
		}
	}
	return lo, refused, nil
}

// describeLongest says how long a plain key (letters, digits and '-')
// may be.
func describeLongest(longest int, refused *response) string {
	switch {
	case refused == nil:
		return fmt.Sprintf("a key of %d characters accepted (Stripe's limit; longer ones not tried)", MaxKeyLen)
	case longest == 0:
		return fmt.Sprintf("no key of letters, digits and '-' accepted, of 1 to %d characters (%s)", MaxKeyLen, statusText(refused.status))
	}
	return fmt.Sprintf("the longest key of letters, digits and '-' accepted has %d characters (%d: %s)", longest, longest+1, statusText(refused.status))
}
