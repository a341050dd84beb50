package diff

import (
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// TestRegenerated classifies fields by pointer and value shape, both ways:
// request metadata that each attempt regenerates (the only fields a hint
// may offer to leave out of the key) and fields that identify the effect,
// whatever their values look like.
func TestRegenerated(t *testing.T) {
	for _, tc := range []struct {
		ptr   string
		shape Shape
		want  bool
	}{
		// The attempt's time.
		{"/ts", ShapeTime, true},
		{"/timestamp", ShapeTime, true},
		{"/sent_at", ShapeTime, true},
		{"/sent_at_ms", ShapeTime, true},
		{"/sentAtMs", ShapeTime, true},
		{"/created", ShapeTime, true},
		{"/createdAt", ShapeTime, true},
		{"/updated_at", ShapeTime, true},
		{"/requested-at", ShapeTime, true},
		{"/client_ts", ShapeTime, true},
		{"/request_time", ShapeTime, true},
		{"/clientTime", ShapeTime, true},
		{"/now", ShapeTime, true},
		{"/meta/time", ShapeTime, true},
		{"/_meta/ts", ShapeTime, true},
		{"/headers/Date", ShapeTime, true},
		// Request ids, trace ids, nonces.
		{"/request_id", ShapeID, true},
		{"/requestId", ShapeID, true},
		{"/x-request-id", ShapeID, true},
		{"/client_request_id", ShapeID, true},
		{"/trace_id", ShapeID, true},
		{"/trace", ShapeID, true},
		{"/traceparent", ShapeID, true},
		{"/span_id", ShapeID, true},
		{"/correlation_id", ShapeID, true},
		{"/nonce", ShapeID, true},
		{"/tracing/id", ShapeID, true},
		{"/headers/X-Request-Id", ShapeID, true},
		{"/headers/x-b3-spanid", ShapeID, true},
		{"/headers/X-Correlation-ID", ShapeID, true},
		// Attempt counters.
		{"/attempt", ShapeCounter, true},
		{"/meta/attempt", ShapeCounter, true},
		{"/attempt_no", ShapeCounter, true},
		{"/retry_count", ShapeCounter, true},
		{"/retries", ShapeCounter, true},
		{"/numTries", ShapeCounter, true},
		{"/attempt_id", ShapeID, true},
		// Named by the parent.
		{"/request/id", ShapeID, true},
		{"/request/at", ShapeTime, true},
		{"/sent/unix", ShapeTime, true},
		{"/created/ms", ShapeTime, true},
		{"/client/nonce", ShapeID, true},
		{"/rows/0/ts", ShapeTime, true},

		// Fields of the effect, whatever their values look like.
		{"/start", ShapeTime, false},
		{"/start_time", ShapeTime, false},
		{"/startAt", ShapeTime, false},
		{"/due_at", ShapeTime, false},
		{"/deadline", ShapeTime, false},
		{"/send_at", ShapeTime, false},
		{"/scheduled_for", ShapeTime, false},
		{"/expires_at", ShapeTime, false},
		{"/date", ShapeTime, false},
		{"/time", ShapeTime, false},
		{"/event/created_by", ShapeID, false},
		{"/meeting/start", ShapeTime, false},
		{"/meta/amount", ShapeCounter, false},
		{"/order/created_at", ShapeTime, false},
		{"/request/amount", ShapeCounter, false},
		{"/at/ms", ShapeTime, false},
		{"/reading/at", ShapeTime, false},
		{"/batch_id", ShapeID, false},
		{"/probe_id", ShapeID, false},
		{"/document_id", ShapeID, false},
		{"/order_id", ShapeID, false},
		{"/customer_id", ShapeID, false},
		{"/id", ShapeID, false},
		{"/account", ShapeID, false},
		{"/payment_intent", ShapeID, false},
		{"/quantity", ShapeCounter, false},
		{"/amount", ShapeCounter, false},
		{"/amount_cents", ShapeCounter, false},
		{"/request_amount", ShapeCounter, false},
		{"/retry_amount", ShapeCounter, false},
		{"/count", ShapeCounter, false},
		{"/issue", ShapeCounter, false},
		{"/price", ShapeOther, false},
		{"/body", ShapeOther, false},
		{"/message", ShapeOther, false},
		{"/labels", ShapeOther, false},
		{"/attendees", ShapeOther, false},
		{"/title", ShapeOther, false},
		{"/draft", ShapeOther, false},
		{"/to", ShapeOther, false},
		{"/subject", ShapeOther, false},
		// Identity: who the call acts for or as, whatever its values look
		// like and wherever it sits.
		{"/headers/X-Tenant-Id", ShapeID, false},
		{"/headers/X-Tenant", ShapeID, false},
		{"/headers/X-Api-Key", ShapeID, false},
		{"/headers/Authorization", ShapeID, false},
		{"/headers/X-Account-Id", ShapeID, false},
		{"/headers/X-User-Id", ShapeID, false},
		{"/meta/tenant_id", ShapeID, false},
		{"/meta/session", ShapeID, false},
		{"/tenant/request_id", ShapeID, false},
		{"/tenantId", ShapeID, false},
		{"/api_key", ShapeID, false},
		{"/apiKey", ShapeID, false},
		{"/idempotency_key", ShapeID, false},
		{"/user/id", ShapeID, false},
		{"/customer/nonce", ShapeID, false},
		{"/account/attempt", ShapeCounter, false},
		{"/auth/token", ShapeID, false},
		// Inside headers or meta, a random-looking value is not metadata
		// for where it sits: its name must say so.
		{"/headers/X-Shard", ShapeID, false},
		{"/headers/X-Workspace-Id", ShapeID, false},
		{"/meta/ref", ShapeID, false},
		{"/meta/seq", ShapeCounter, false},
		// Metadata words with a value of another shape.
		{"/ts", ShapeOther, false},
		{"/request_id", ShapeTime, false},
		{"/attempt", ShapeTime, false},
		{"/trace_id", ShapeCounter, false},
		{"", ShapeTime, false},
		{"/meta", ShapeID, false},
	} {
		if got := Regenerated(tc.ptr, tc.shape); got != tc.want {
			t.Errorf("Regenerated(%q, %v) = %v, want %v", tc.ptr, tc.shape, got, tc.want)
		}
	}
}

// TestShapeOf reads the shapes of pairs of values.
func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want Shape
	}{
		{`"2025-03-14T10:00:00Z"`, `"2025-03-14T10:00:05.123Z"`, ShapeTime},
		{`"2025-03-14 10:00:00"`, `"2025-03-14 10:00:07"`, ShapeTime},
		{`1741946400`, `1741946405`, ShapeTime},
		{`1741946400000`, `1741946405000`, ShapeTime},
		{`"1741946400"`, `"1741946405"`, ShapeTime},
		{`"4bf92f3577b34da6a3ce929d0e0e4736"`, `"00f067aa0ba902b7a3ce929d0e0e4736"`, ShapeID},
		{`"req_8f2a9c1d7e3b"`, `"req_1b2c3d4e5f6a"`, ShapeID},
		{`"9b2f1c3e-8a7d-4f6e-9c1b-2d3e4f5a6b7c"`, `"1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"`, ShapeID},
		{`1`, `2`, ShapeCounter},
		{`19.99`, `24.5`, ShapeOther},
		{`0.3`, `0.30000000000000004`, ShapeOther},
		{`"Quarterly review"`, `"Design sync"`, ShapeOther},
		{`"req_8f2a9c1d7e3b"`, `"ord_1b2c3d4e5f6a"`, ShapeOther},
		{`"a@example.com"`, `"b@example.com"`, ShapeOther},
		{`true`, `false`, ShapeOther},
		{`[1]`, `[2]`, ShapeOther},
	} {
		da, err1 := canon.Parse([]byte(tc.a), canon.JS)
		db, err2 := canon.Parse([]byte(tc.b), canon.JS)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got := ShapeOf(da.Root(), db.Root()); got != tc.want {
			t.Errorf("ShapeOf(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestIdentity tells the pointers that name who a call acts for, by the
// member's or the parent's name, from the others.
func TestIdentity(t *testing.T) {
	for ptr, want := range map[string]bool{
		"/headers/X-Tenant-Id": true, "/headers/X-Api-Key": true, "/tenant": true, "/user/id": true,
		"/customer_id": true, "/account": true, "/auth/token": true, "/apiKey": true,
		"/headers/X-Request-Id": false, "/trace_id": false, "/ts": false, "/amount": false, "": false, "/order_id": false,
	} {
		if got := Identity(ptr); got != want {
			t.Errorf("Identity(%q) = %v, want %v", ptr, got, want)
		}
	}
}
