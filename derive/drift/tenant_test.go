package drift

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tenantLog writes a log of a multi-tenant agent: orders placed and
// returned through two tools whose headers carry the tenant (X-Tenant-Id, X-Tenant), its API
// key and a request id, all random-looking. Twelve pairs are two tenants
// placing the same order (the same task, the same body): distinct writes
// that differ only in the tenant's headers and the request id. Retried
// returns regenerate the request id alone, and lookups fill the log
// to 3,245 calls. It returns the lines of each tenant pair.
func tenantLog(seed uint64) ([]byte, [][2]int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	token := func(n int) string {
		b := make([]byte, n)
		for k := range b {
			b[k] = alnum[r.IntN(len(alnum))]
		}
		return string(b)
	}
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for k := range b {
			b[k] = digits[r.IntN(16)]
		}
		return string(b)
	}
	uuid := func() string {
		h := hex(32)
		return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
	}
	type tenant struct{ id, slug, key string }
	newTenant := func() tenant {
		return tenant{id: "tn_" + token(20), slug: token(24), key: "sk_live_" + token(32)}
	}
	var log bytes.Buffer
	line := 0
	order := func(tool, task string, tn tenant, sku string, qty int) int {
		fmt.Fprintf(&log, `{"task":%q,"tool":%q,"call_id":"","args":{"sku":%q,"qty":%d,"ship":"standard","headers":{"X-Tenant-Id":%q,"X-Tenant":%q,"X-Api-Key":%q,"X-Request-Id":%q}}}`+"\n",
			task, tool, sku, qty, tn.id, tn.slug, tn.key, uuid())
		line++
		return line
	}
	lookup := func(task string) {
		fmt.Fprintf(&log, `{"task":%q,"tool":"lookup","call_id":"","args":{"q":%q}}`+"\n", task, token(12))
		line++
	}
	var pairs [][2]int
	for k := 0; line < 3245; k++ {
		task := fmt.Sprintf("agent-%d", k%40)
		sku, qty := "SKU-"+token(6), 1+r.IntN(9)
		switch {
		case k%25 == 0 && len(pairs) < 12:
			// Two tenants place the same order.
			a := order("create_order", task, newTenant(), sku, qty)
			b := order("create_order", task, newTenant(), sku, qty)
			pairs = append(pairs, [2]int{a, b})
		case k%3 == 0:
			// One tenant's return retried: a new request id.
			tn := newTenant()
			order("return_order", task, tn, sku, qty)
			lookup(task)
			order("return_order", task, tn, sku, qty)
		default:
			order("create_order", task, newTenant(), sku, qty)
		}
		lookup(task)
	}
	log.Truncate(bytes.LastIndexByte(log.Bytes()[:log.Len()-1], '\n') + 1) // whole lines only, 3,245 or fewer
	return log.Bytes(), pairs
}

// TestNoOmitOfTenant: in a log where twelve pairs of tenants placed the
// same order, drift never takes a pair for one call retried (another
// tenant or API key is another write, however random the ids look), never
// offers to leave the tenant's headers or its API key out of the key,
// neither in a finding's omit flags nor in a tool's suggestion, and
// verifies no finding by leaving them out: adopting that would give two
// tenants' distinct orders one key. The request id, which each attempt
// regenerates, is still offered.
func TestNoOmitOfTenant(t *testing.T) {
	identity := []string{"/headers/X-Tenant-Id", "/headers/X-Tenant", "/headers/X-Api-Key"}
	for seed := uint64(1); seed <= 3; seed++ {
		log, pairs := tenantLog(seed)
		if len(pairs) != 12 {
			t.Fatalf("seed %d: %d tenant pairs planted, want 12", seed, len(pairs))
		}
		rep := analyze(t, log, Options{})
		requestID := false
		for _, f := range rep.Findings {
			for _, p := range f.Omit {
				if slices.Contains(identity, p) {
					t.Errorf("seed %d: lines %v: --omit %s offered", seed, f.Lines, p)
				}
				requestID = requestID || p == "/headers/X-Request-Id"
			}
			if f.Verified && slices.ContainsFunc(f.Pointers(), func(p string) bool { return slices.Contains(identity, p) }) {
				t.Errorf("seed %d: lines %v: verified with the tenant left out: %+v", seed, f.Lines, f)
			}
			for _, pair := range pairs {
				if slices.Contains(f.Lines, pair[0]) && slices.Contains(f.Lines, pair[1]) {
					t.Errorf("seed %d: tenant pair %v taken for one call (%s): %+v", seed, pair, f.Kind, f)
				}
			}
		}
		for _, s := range rep.Suggestions {
			for _, p := range s.Omit {
				if slices.Contains(identity, p) {
					t.Errorf("seed %d: tool %s: suggestion --omit %s", seed, s.Tool, p)
				}
			}
		}
		if !requestID {
			t.Errorf("seed %d: the request id of the retries was not offered: %d findings, suggestions %+v", seed, len(rep.Findings), rep.Suggestions)
		}
		if t.Failed() {
			t.Logf("seed %d: first lines:\n%s", seed, strings.Join(strings.SplitN(string(log), "\n", 6)[:5], "\n"))
			return
		}
	}
}
