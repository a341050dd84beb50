package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// A URL whose scheme does not match the server: rediss:// for a plain
// server, or redis:// for a TLS-only one. go-redis alone reports the
// first as "context deadline exceeded" after 25 s (a plain Redis never
// answers a ClientHello: it waits for the end of an inline command, and
// go-redis gives each of its five dial attempts the whole dial timeout),
// and the second as a reset connection.

// handshakeTimeout bounds the TLS handshake of a connection whose TCP
// connect succeeded, until one handshake has succeeded: a TLS server
// answers a ClientHello in one round trip, a plain Redis never does (and
// answers a plain PING at once: see plainProbeAfter).
const handshakeTimeout = 3 * time.Second

// probeTimeout bounds a look at what the server speaks.
const probeTimeout = time.Second

// plainProbeAfter is how long a handshake waits for an answer before a
// look at whether the server speaks plain Redis.
const plainProbeAfter = 300 * time.Millisecond

var errTLSMismatch = errors.New("TLS mismatch")

// probeAfter is when a handshake still unanswered looks at whether the
// server speaks plain Redis: plainProbeAfter, or sooner when the dial
// timeout is short (a third of it), so that the look ends before the
// dial does.
func probeAfter(dialTimeout time.Duration) time.Duration {
	if t := dialTimeout / 3; t > 0 && t < plainProbeAfter {
		return t
	}
	return plainProbeAfter
}

// tlsDialer dials TCP, then does the TLS handshake itself: until a first
// handshake succeeded, one that times out or reads something that is not
// TLS fails at once, and so does every later dial of the store (no
// retries of a handshake that cannot work).
type tlsDialer struct {
	o      *redis.Options
	ok     atomic.Bool
	failed atomic.Pointer[error]
}

func (d *tlsDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if !d.ok.Load() {
		if err := d.failed.Load(); err != nil {
			return nil, *err
		}
	}
	// go-redis's own dialer's keep-alive policy.
	nd := &net.Dialer{Timeout: d.o.DialTimeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}}
	raw, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	hctx := ctx
	var plain atomic.Bool
	if !d.ok.Load() {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
		// A handshake still unanswered after a moment: ask the server in
		// plain Redis, on a second connection. A plain Redis answers at
		// once (and will never answer the handshake); a TLS server does
		// not answer that, and its handshake goes on.
		probe := time.AfterFunc(probeAfter(d.o.DialTimeout), func() {
			if speaksPlain(hctx, network, addr) {
				plain.Store(true)
				cancel()
			}
		})
		defer probe.Stop()
	}
	c := tls.Client(raw, d.o.TLSConfig)
	err = c.HandshakeContext(hctx)
	if err == nil {
		d.ok.Store(true)
		return c, nil
	}
	raw.Close()
	var rh tls.RecordHeaderError
	// The dial's own deadline (dial_timeout) passed first: the server may
	// still be a plain Redis, which one more look tells (the deadline is
	// past, so that look has a second of its own; a cancelled dial gets
	// none).
	if !d.ok.Load() && !plain.Load() && errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		speaksPlain(context.WithoutCancel(ctx), network, addr) {
		plain.Store(true)
	}
	switch {
	case d.ok.Load():
		return nil, err
	case plain.Load():
		err = fmt.Errorf("the server at %s did not answer the TLS handshake, and it answers plain Redis commands", addr)
	case ctx.Err() != nil:
		return nil, err
	case errors.As(err, &rh):
		err = fmt.Errorf("the server at %s answered the TLS handshake with something that is not TLS (%q)", addr, rh.RecordHeader[:])
		if speaksPlain(ctx, network, addr) {
			err = fmt.Errorf("%w; it answers plain Redis commands", err)
		}
	case hctx.Err() != nil:
		err = fmt.Errorf("the server at %s accepted the connection but did not answer the TLS handshake within %v", addr, handshakeTimeout)
	default:
		return nil, err
	}
	err = storeutil.Hinted(fmt.Errorf("%w: %w", errTLSMismatch, err),
		"rediss:// is for a server with TLS (tls-port): use redis:// for a plain server")
	d.failed.Store(&err)
	return nil, err
}

// speaksPlain reports whether the server at addr answers a plain PING.
func speaksPlain(ctx context.Context, network, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	// +PONG, or an error reply (-NOAUTH: it wants a password).
	return err == nil && (strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"))
}

// speaksTLS reports whether the server at addr completes a TLS handshake
// (its certificate unchecked: this only tells what it speaks).
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	host, _, _ := net.SplitHostPort(addr)
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, ServerName: host}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// plainToTLS explains a failure of a plain (redis://) connection to a
// server that speaks only TLS; other errors are returned as they are.
func plainToTLS(ctx context.Context, o *redis.Options, err error) error {
	var re redis.Error
	if o.TLSConfig != nil || o.Network != "tcp" || errors.As(err, &re) || !speaksTLS(ctx, o.Addr) {
		return err
	}
	return storeutil.Hinted(fmt.Errorf("%w: the server at %s speaks only TLS (%v)", errTLSMismatch, o.Addr, err),
		"redis:// is for a plain server: use rediss:// for a server with TLS")
}
