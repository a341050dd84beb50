package probe

import (
	"fmt"
	"time"
)

// Planned is a request a probe would send, for a dry run.
type Planned struct {
	Rule  string
	Note  string // what the request is for
	Key   string // "" when it is sent without a key
	Body  []byte
	Times int // how many are sent at once (in-flight), else 1
}

// Plan returns the requests Run would send, in order, with keys made as
// Run makes them (fresh on every call). It assumes that the endpoint
// accepts a key of 255 characters: where it does not, Run sends up to 8
// more key-limits requests, and the other rules' keys take the first
// shape found accepted.
func Plan(cfg Config) ([]Planned, error) {
	p, err := newProber(cfg)
	if err != nil {
		return nil, err
	}
	body := cfg.Body
	one := func(rule, note, key string, b []byte) Planned {
		return Planned{Rule: rule, Note: note, Key: key, Body: b, Times: 1}
	}
	plan := []Planned{
		one(KeyLimits, "a UUID key", p.keys.uuid(), body),
		one(KeyLimits, "a hex SHA-256 key", p.keys.hex(), body),
		one(KeyLimits, "a base64url SHA-256 key", p.keys.base64url(), body),
		one(KeyLimits, fmt.Sprintf("a key of %d characters (if it is refused, up to 8 more, shorter: a binary search)", MaxKeyLen),
			p.keys.ofLen(MaxKeyLen), body),
	}
	replayKey := p.keys.of(shapePrefixed)
	plan = append(plan,
		one(Replay, "the first request", replayKey, body),
		one(Replay, "the same request again", replayKey, body))
	if changed, what, ok := changeBody(body); ok {
		key := p.keys.of(shapePrefixed)
		plan = append(plan,
			one(Mismatch, "the first request", key, body),
			one(Mismatch, "the same key with a changed body ("+what+")", key, changed))
	}
	plan = append(plan,
		Planned{Rule: InFlight, Note: fmt.Sprintf("%d requests at once with one key", cfg.Concurrency),
			Key: p.keys.of(shapePrefixed), Body: body, Times: cfg.Concurrency},
		one(Required, "no key", "", body))
	if cfg.After > 0 {
		plan = append(plan, one(Retention, fmt.Sprintf("the replay's first request again, %s after it", cfg.After.Round(time.Millisecond)), replayKey, body))
	}
	return plan, nil
}

// MaxRequests is the most requests Run sends with cfg's settings.
func MaxRequests(cfg Config) int {
	n := 3 + 1 + 8 + 2 + cfg.Concurrency + 1 // key-limits, replay, in-flight, required
	if _, _, ok := changeBody(cfg.Body); ok {
		n += 2
	}
	if cfg.After > 0 {
		n++
	}
	return n
}
