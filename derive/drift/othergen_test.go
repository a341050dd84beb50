package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// otherLog is a second generator, written apart from driftgen with other
// field names, nesting, id and time formats: arrays of objects whose
// elements drift inside, ULID nonces, epoch nanoseconds, time zones,
// retry counters from 0, Salesforce-style entity ids that recur. The
// heuristic was not tuned to it.
func otherLog(seed uint64, n int) ([]byte, [][]int, [][]int) {
	r := rand.New(rand.NewPCG(seed, 99))
	const crock = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	ulid := func() string {
		b := make([]byte, 26)
		for i := range b {
			b[i] = crock[r.IntN(32)]
		}
		return string(b)
	}
	hex := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = "0123456789abcdef"[r.IntN(16)]
		}
		return string(b)
	}
	sfid := func() string { // 15 characters, entity ids that recur in a session
		const a = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		b := []byte("0031x")
		for range 10 {
			b = append(b, a[r.IntN(len(a))])
		}
		return string(b)
	}
	clock := time.Date(2025, 6, 1, 8, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	type ev struct {
		session, tool, call string
		args                map[string]any
	}
	slots := make([]*ev, n)
	var drift, collapse [][]int
	free := func(i int) int {
		for ; i < n; i++ {
			if slots[i] == nil {
				return i
			}
		}
		return -1
	}
	type sess struct {
		id, contact, name string
	}
	sessions := make([]*sess, 30)
	for k := range sessions {
		sessions[k] = &sess{id: fmt.Sprintf("S%04d", k), contact: sfid(), name: []string{"Jo Smith", "Ana Lima", "Kai Wu", "Lea Roy"}[r.IntN(4)]}
	}
	notes := [][]string{
		{"customer", "asked", "to", "move", "the", "call", "to", "next", "week"},
		{"follow", "up", "on", "the", "renewal", "quote", "sent", "in", "May"},
	}
	syn := map[string]string{"asked": "wants", "move": "shift", "call": "meeting", "follow": "check", "quote": "offer", "sent": "emailed"}
	reword := func(ws []string) []string {
		c := slices.Clone(ws)
		for {
			k := r.IntN(len(c))
			if s, ok := syn[c[k]]; ok {
				c[k] = s
				return c
			}
		}
	}
	joined := func(ws []string) string {
		b, _ := json.Marshal(ws)
		return string(bytes.Trim(bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(`","`), []byte(" ")), []byte(`"`), nil), "[]"))
	}
	for i := 0; i < n; i++ {
		if slots[i] != nil {
			continue
		}
		clock = clock.Add(time.Duration(300+r.IntN(2000)) * time.Millisecond)
		s := sessions[r.IntN(len(sessions))]
		if r.IntN(40) == 0 {
			s = &sess{id: fmt.Sprintf("S%04d-%d", i, r.IntN(9)), contact: sfid(), name: "Max Mu"}
			sessions[r.IntN(len(sessions))] = s
		}
		e := &ev{session: s.id, call: "tc-" + hex(12)}
		var retry func(a map[string]any, k int)
		var sibling func(a map[string]any)
		switch r.IntN(4) {
		case 0:
			e.tool = "book_flight"
			e.args = map[string]any{
				"passenger": map[string]any{"name": s.name, "contact": s.contact},
				"flight":    fmt.Sprintf("LH%d", 100+r.IntN(900)), "date": "2025-07-" + fmt.Sprint(10+r.IntN(19)),
				"seat": []string{"aisle", "window"}[r.IntN(2)], "retry_count": 0,
				"client": map[string]any{"sent_ns": clock.UnixNano(), "span": hex(16)},
			}
			retry = func(a map[string]any, k int) {
				a["retry_count"] = k
				a["client"] = map[string]any{"sent_ns": clock.UnixNano() + int64(k)*int64(3*time.Second), "span": hex(16)}
			}
			sibling = func(a map[string]any) {
				a["flight"] = fmt.Sprintf("LX%d", 100+r.IntN(900))
				a["client"] = map[string]any{"sent_ns": clock.UnixNano() + int64(time.Second), "span": hex(16)}
			}
		case 1:
			e.tool = "update_crm"
			ws := notes[r.IntN(len(notes))]
			e.args = map[string]any{"contact_id": s.contact, "status": []string{"open", "won", "lost"}[r.IntN(3)],
				"note": joined(ws), "request_uuid": fmt.Sprintf("%s-%s-1%s-8%s-%s", hex(8), hex(4), hex(3), hex(3), hex(12)),
				"sent": clock.Format("2006-01-02 15:04:05.000000-07:00")}
			retry = func(a map[string]any, k int) {
				a["request_uuid"] = fmt.Sprintf("%s-%s-1%s-8%s-%s", hex(8), hex(4), hex(3), hex(3), hex(12))
				a["sent"] = clock.Add(time.Duration(k) * 4 * time.Second).Format("2006-01-02 15:04:05.000000-07:00")
				if r.IntN(3) == 0 {
					a["note"] = joined(reword(ws))
				}
			}
			sibling = func(a map[string]any) {
				for {
					st := []string{"open", "won", "lost"}[r.IntN(3)]
					if st != a["status"] {
						a["status"] = st
						break
					}
				}
				a["request_uuid"] = fmt.Sprintf("%s-%s-1%s-8%s-%s", hex(8), hex(4), hex(3), hex(3), hex(12))
			}
		case 2:
			e.tool = "create_invoice"
			items := []any{}
			for k := range 2 + r.IntN(3) {
				items = append(items, map[string]any{"sku": fmt.Sprintf("A-%03d", k*7+r.IntN(7)), "qty": 1 + r.IntN(4), "unit_price": float64(r.IntN(9000)+100) / 100})
			}
			e.args = map[string]any{"customer": s.contact, "items": items, "currency": "CHF", "nonce": ulid(),
				"created_at": clock.Format(time.RFC3339)}
			retry = func(a map[string]any, k int) {
				a["nonce"] = ulid()
				a["created_at"] = clock.Add(time.Duration(k) * 5 * time.Second).Format(time.RFC3339)
				it := slices.Clone(a["items"].([]any))
				switch r.IntN(3) {
				case 0: // reordered: the first element moves to the end
					it = append(it[1:], it[0])
				case 1: // float noise inside an element
					m := it[0].(map[string]any)
					c := map[string]any{}
					for k, v := range m {
						c[k] = v
					}
					c["unit_price"] = math.Nextafter(c["unit_price"].(float64), 1e9)
					it[0] = c
				}
				a["items"] = it
			}
			sibling = func(a map[string]any) {
				it := slices.Clone(a["items"].([]any))
				m := it[0].(map[string]any)
				c := map[string]any{}
				for k, v := range m {
					c[k] = v
				}
				c["qty"] = c["qty"].(int) + 5
				it[0] = c
				a["items"] = it
				a["nonce"] = ulid()
			}
		default:
			e.tool = "send_sms"
			e.args = map[string]any{"to": fmt.Sprintf("+4179%07d", r.IntN(10000000)), "text": "Your code is ready"}
		}
		slots[i] = e
		switch x := r.Float64(); {
		case retry != nil && x < 0.3:
			lines := []int{i + 1}
			at := i
			prev := e.args
			for k := 1; k <= 1+r.IntN(2); k++ {
				j := free(at + 1 + r.IntN(20))
				if j < 0 {
					break
				}
				b, _ := json.Marshal(prev)
				var c map[string]any
				json.Unmarshal(b, &c)
				// json round trip turns ints to floats: restore what retry reads
				c["items"] = prev["items"]
				if _, ok := prev["retry_count"]; ok {
					c["retry_count"] = 0
				}
				retry(c, k)
				if _, ok := prev["items"]; !ok {
					delete(c, "items")
				}
				slots[j] = &ev{session: e.session, tool: e.tool, call: e.call, args: c}
				lines = append(lines, j+1)
				prev, at = c, j
			}
			if len(lines) > 1 {
				drift = append(drift, lines)
			}
		case sibling != nil && x < 0.4:
			b, _ := json.Marshal(e.args)
			var c map[string]any
			json.Unmarshal(b, &c)
			c["items"] = e.args["items"]
			if _, ok := e.args["items"]; !ok {
				delete(c, "items")
			}
			sibling(c)
			if j := free(i + 1 + r.IntN(20)); j >= 0 {
				slots[j] = &ev{session: e.session, tool: e.tool, call: "tc-" + hex(12), args: c}
			}
		case retry == nil && x < 0.2: // the same text twice under two call ids
			if j := free(i + 1 + r.IntN(10)); j >= 0 {
				slots[j] = &ev{session: e.session, tool: e.tool, call: "tc-" + hex(12), args: e.args}
				collapse = append(collapse, []int{i + 1, j + 1})
			}
		}
	}
	var out bytes.Buffer
	for _, e := range slots {
		b, _ := json.Marshal(map[string]any{"task": e.session, "tool": e.tool, "call_id": e.call, "args": e.args})
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), drift, collapse
}

// TestPrecisionRecallOtherGenerator measures the findings on logs of the
// second generator.
func TestPrecisionRecallOtherGenerator(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{11, 12} {
		log, plantedDrift, plantedCollapse := otherLog(seed, 20000)
		rep := analyze(t, log, Options{})
		var drift, collapse [][]int
		for _, f := range rep.Findings {
			if f.Kind == FindingDrift {
				drift = append(drift, f.Lines)
			} else {
				collapse = append(collapse, f.Lines)
			}
		}
		for _, c := range []struct {
			what           string
			found, planted [][]int
		}{{"drift", drift, plantedDrift}, {"collapse", collapse, plantedCollapse}} {
			p, r, fp, fn := score(c.found, c.planted)
			t.Logf("seed %d %s: %d found, %d planted: precision %.4f, recall %.4f", seed, c.what, len(c.found), len(c.planted), p, r)
			if p < 0.95 || r < 0.95 {
				t.Errorf("seed %d %s: precision %.4f recall %.4f; false positives %v; missed %v", seed, c.what, p, r, head(fp), head(fn))
			}
		}
	}
}
