package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessiond/sessiond/config"
)

// Webhook defaults and bounds.
const (
	defaultWebhookTimeout = 10 * time.Second
	defaultRetries        = 3
	defaultRetryBackoff   = time.Second
	maxRetryBackoff       = 30 * time.Second
	// maxRetryAfter caps a server's Retry-After, which could otherwise
	// hold the rule's queue for hours.
	maxRetryAfter = time.Minute
	// maxDrain is how much of a response body is read, so that the
	// connection can be reused and a huge body costs nothing.
	maxDrain = 64 << 10
)

// newHTTPClient returns the client webhooks are sent with: no redirects (a
// secret header must not follow a redirect to another host, and Go only
// strips Authorization and Cookie), no kept-alive connections
// (notifications are rare, and nothing lingers after Close), proxies from
// the environment. A guard, when set, checks every address the client
// connects to, once resolved (so that a name that resolves anew cannot
// slip past it).
func newHTTPClient(guard func(host string, addr netip.AddrPort) error) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	if guard != nil {
		t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(address)
			d := net.Dialer{Timeout: 30 * time.Second, Control: func(_, resolved string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(resolved)
				if err != nil {
					return err
				}
				return guard(host, ap)
			}}
			return d.DialContext(ctx, network, address)
		}
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ErrDestination is matched by errors.Is when a project's webhook under a
// root daemon would reach what it may not: loopback, link-local, an
// unspecified address or the daemon's own listener.
var ErrDestination = errors.New("destination not allowed")

// projectGuard is the guard of a root daemon's webhooks for another
// user's project: no loopback, link-local or unspecified address, nor one
// of the daemon's own listeners, unless notify_allow_hosts allows it.
func projectGuard(allow []config.HostPattern, own []netip.AddrPort) func(string, netip.AddrPort) error {
	return func(host string, ap netip.AddrPort) error {
		a := ap.Addr().Unmap()
		for _, p := range allow {
			if p.Allows(host, a, int(ap.Port())) {
				return nil
			}
		}
		switch {
		case a.IsLoopback(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsUnspecified(), a.IsInterfaceLocalMulticast():
			return fmt.Errorf("%w: %s is %s; notify_allow_hosts in the daemon's config can allow it", ErrDestination, ap, addrKind(a))
		}
		for _, o := range own {
			if o.Port() == ap.Port() && (o.Addr().IsUnspecified() || o.Addr().Unmap() == a) {
				return fmt.Errorf("%w: %s is the daemon's own listener", ErrDestination, ap)
			}
		}
		return nil
	}
}

func addrKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address"
	}
	return "a link-local address"
}

// webhookSink POSTs the event to a URL, retrying with exponential backoff
// after network errors, 5xx and 429, never after another 4xx.
type webhookSink struct {
	rule   *compiled
	client *http.Client
	// guarded is the client of another user's project under a root
	// daemon (projectGuard).
	guarded *http.Client
	backoff time.Duration // the first retry's delay; it doubles
	timeout time.Duration // per attempt
	retries int
}

func newWebhookSink(c *compiled, client, guarded *http.Client, backoff time.Duration) *webhookSink {
	s := &webhookSink{rule: c, client: client, guarded: guarded, backoff: backoff, timeout: c.rule.Timeout.Duration, retries: defaultRetries}
	if s.timeout == 0 {
		s.timeout = defaultWebhookTimeout
	}
	if c.rule.Retries != nil {
		s.retries = *c.rule.Retries
	}
	if s.backoff <= 0 {
		s.backoff = defaultRetryBackoff
	}
	return s
}

func (s *webhookSink) send(ctx context.Context, d *delivery) error {
	r := &s.rule.rule
	where := "webhook " + config.RedactURL(r.Webhook)
	secret, err := readSecret(ctx, s.rule, &d.ev)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	req, err := render(r.Template, &d.payload, urgent(d.ev))
	if err != nil {
		return fmt.Errorf("%s: render: %w", where, err)
	}
	if secret != "" {
		h := r.SecretHeader
		if h == "" {
			h = config.DefaultSecretHeader
		}
		req.header.Set(h, secret)
	}
	client := s.client
	if s.rule.origin == FromProject && d.ev.Owner.Switches() && os.Geteuid() == 0 {
		client = s.guarded
	}
	backoff := s.backoff
	var last error
	for attempt := 0; attempt <= s.retries; attempt++ {
		retry, after, err := s.attempt(ctx, client, req)
		if err == nil {
			return nil
		}
		last = scrub(err, secret)
		if !retry {
			return fmt.Errorf("%s: %w", where, last)
		}
		if attempt == s.retries {
			break
		}
		wait := backoff
		if after > 0 {
			wait = min(after, maxRetryAfter)
		}
		backoff = min(2*backoff, maxRetryBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: stopped before retry %d (%w); last error: %w", where, attempt+1, ctx.Err(), last)
		case <-t.C:
		}
	}
	if s.retries == 0 {
		return fmt.Errorf("%s: %w", where, last)
	}
	return fmt.Errorf("%s: gave up after %d attempts: %w", where, s.retries+1, last)
}

// attempt sends the request once. It says whether a failure is worth a
// retry, and after how long when the server said (Retry-After).
func (s *webhookSink) attempt(ctx context.Context, client *http.Client, r request) (retry bool, after time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.rule.rule.Webhook, bytes.NewReader(r.body))
	if err != nil {
		// NewRequest quotes the URL, which may hold a token.
		return false, 0, errors.New("invalid URL")
	}
	req.Header = r.header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		if actx.Err() != nil {
			return true, 0, fmt.Errorf("no response within %s", s.timeout)
		}
		// *url.Error quotes the URL too; its cause is what matters.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, ErrDestination) {
			return false, 0, err
		}
		return true, 0, err
	}
	defer resp.Body.Close()
	// Drained (a read error is ignored), never quoted: the status says
	// whether the notification arrived, and what a server answers is not
	// for the rule's owner to read through the daemon.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, 0, nil
	case code >= 300 && code < 400:
		return false, 0, fmt.Errorf("%s: redirected to %s; redirects are not followed (so a secret never goes elsewhere): give the final URL",
			resp.Status, config.RedactURL(resp.Header.Get("Location")))
	case code == http.StatusTooManyRequests || code >= 500:
		return true, retryAfter(resp.Header.Get("Retry-After")), errors.New(resp.Status)
	default:
		return false, 0, fmt.Errorf("%s (not retried)", resp.Status)
	}
}

// retryAfter parses a Retry-After header given in seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// scrub removes the secret from an error's text, should a server have
// echoed it back.
func scrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "[secret]"))
}
