package config

import (
	"fmt"
	"net"
	"strconv"
)

// validateMetrics checks metrics_listen: a host:port (a numeric port, 0
// for any), and only with metrics on.
func (c *Config) validateMetrics() error {
	if c.MetricsListen == "" {
		return nil
	}
	if !c.Metrics {
		return &FieldError{"metrics_listen", "is set but metrics is false: set metrics = true to serve them"}
	}
	_, port, err := net.SplitHostPort(c.MetricsListen)
	if err != nil {
		return &FieldError{"metrics_listen", fmt.Sprintf("%q is not host:port (e.g. 127.0.0.1:9477): %v", c.MetricsListen, err)}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return &FieldError{"metrics_listen", fmt.Sprintf("port %q is not a number from 0 to 65535", port)}
	}
	return nil
}
