package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// HostPattern is one entry of notify_allow_hosts: a host name, an IP
// address or a CIDR prefix, and a port (0: any).
type HostPattern struct {
	Name   string       // a host name, lower case; "" for an address or prefix
	Prefix netip.Prefix // an address (a /32 or /128) or a prefix
	Port   int
}

// ParseHostPattern parses "HOST", "HOST:PORT", "ADDR", "[ADDR]:PORT",
// "PREFIX/BITS" or "PREFIX/BITS:PORT".
func ParseHostPattern(s string) (HostPattern, error) {
	var p HostPattern
	host := strings.TrimSpace(s)
	if host == "" {
		return p, fmt.Errorf("empty host")
	}
	if h, port, err := net.SplitHostPort(host); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return p, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
		}
		host, p.Port = h, n
	} else if i := strings.LastIndexByte(host, ':'); i > 0 && strings.Contains(host[:i], "/") {
		// PREFIX/BITS:PORT
		n, err := strconv.Atoi(host[i+1:])
		if err != nil || n < 1 || n > 65535 {
			return p, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, host[i+1:])
		}
		host, p.Port = host[:i], n
	}
	if pre, err := netip.ParsePrefix(host); err == nil {
		p.Prefix = pre.Masked()
		return p, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		p.Prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return p, nil
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return p, fmt.Errorf("%q is neither a host name, an IP address nor a CIDR prefix", s)
		}
	}
	p.Name = strings.ToLower(strings.TrimSuffix(host, "."))
	return p, nil
}

// Allows reports whether the pattern allows a connection to addr (and
// port) for the URL host name host.
func (p HostPattern) Allows(host string, addr netip.Addr, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	if p.Name != "" {
		return strings.EqualFold(strings.TrimSuffix(host, "."), p.Name)
	}
	return p.Prefix.Contains(addr.Unmap())
}
