package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Web is the [web] table: the opt-in network listener for what SSH cannot
// reach (a phone), off unless Listen is set.
type Web struct {
	// Listen is host:port ("127.0.0.1:9478"); "" is off.
	Listen string `toml:"listen" json:"listen,omitempty"`
	// Cert and Key are the listener's TLS certificate and key (PEM
	// files); without them sessiond makes a certificate of its own (kept
	// in the state dir, its fingerprint logged) wherever TLS is on.
	Cert string `toml:"cert" json:"cert,omitempty"`
	Key  string `toml:"key" json:"key,omitempty"`
	// TLS turns TLS on for a loopback address too (nil: on everywhere but
	// loopback, where plain HTTP is allowed); false is refused for any
	// other address.
	TLS *bool `toml:"tls" json:"tls,omitempty"`
	// URL is the address people open the page at (a reverse proxy's, a
	// tailnet name); "" is the listener's own. Notifications link to a
	// session's page under it.
	URL string `toml:"url" json:"url,omitempty"`
}

// PageURL is the base of the page's links: URL, else the listener's.
func (w Web) PageURL() string {
	if !w.On() {
		return ""
	}
	if w.URL != "" {
		return strings.TrimSuffix(w.URL, "/")
	}
	scheme := "http"
	if w.UseTLS() {
		scheme = "https"
	}
	return scheme + "://" + w.Listen
}

// On reports whether the listener is configured.
func (w Web) On() bool { return w.Listen != "" }

// Loopback reports whether Listen is a loopback address.
func (w Web) Loopback() bool {
	host, _, err := net.SplitHostPort(w.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// UseTLS reports whether the listener speaks TLS.
func (w Web) UseTLS() bool {
	if w.TLS != nil {
		return *w.TLS
	}
	return !w.Loopback() || w.Cert != ""
}

// validateWeb checks the [web] table.
func (c *Config) validateWeb() error {
	w := c.Web
	if w.Listen == "" {
		if w.Cert != "" || w.Key != "" {
			return &FieldError{"web.cert", "is set but web.listen is not: set listen to serve the web API"}
		}
		return nil
	}
	host, port, err := net.SplitHostPort(w.Listen)
	if err != nil {
		return &FieldError{"web.listen", fmt.Sprintf("%q is not host:port (e.g. 127.0.0.1:9478): %v", w.Listen, err)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return &FieldError{"web.listen", fmt.Sprintf("port %q is not a number from 0 to 65535", port)}
	}
	if host == "" {
		return &FieldError{"web.listen", fmt.Sprintf("%q listens on every address: name one (127.0.0.1, a tailnet's, 0.0.0.0 if you mean it)", w.Listen)}
	}
	if (w.Cert == "") != (w.Key == "") {
		return &FieldError{"web.key", "cert and key go together: give both, or neither (sessiond then makes a certificate of its own)"}
	}
	if u, err := url.Parse(w.URL); w.URL != "" && (err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "") {
		return &FieldError{"web.url", fmt.Sprintf("%q is not an http(s) URL", w.URL)}
	}
	if w.TLS != nil && !*w.TLS && !w.Loopback() {
		return &FieldError{"web.tls", fmt.Sprintf("false on %s, which is not loopback: tokens would cross the network in the clear (plain HTTP only on loopback, e.g. behind a reverse proxy)", w.Listen)}
	}
	return nil
}
