package release

import (
	"regexp"
	"strings"
)

var (
	// A tag: v1, v1.2, 1.2.3; a bare number is an abbreviated commit hash
	// that happens to have no letter.
	numeric  = regexp.MustCompile(`^(v[0-9]+(\.[0-9]+)*|[0-9]+(\.[0-9]+)+)(-|$)`)
	describe = regexp.MustCompile(`^([0-9]+)-g([0-9a-f]+)(-dirty)?$`)
	unsafe   = regexp.MustCompile(`[^A-Za-z0-9.]+`)
)

// PackageVersion turns a version as `git describe --tags --always
// --dirty` prints it into one that dpkg and rpm order correctly:
//
//	v1.2.3               1.2.3
//	v1.2.3-rc1           1.2.3~rc1          (before 1.2.3)
//	v1.2.3-4-gabc1234    1.2.3+4.gabc1234   (after 1.2.3)
//	abc1234-dirty        0.0.0+git.abc1234.dirty
func PackageVersion(v string) string {
	m := numeric.FindStringSubmatch(v)
	if m == nil {
		return "0.0.0+git." + strings.Trim(unsafe.ReplaceAllString(v, "."), ".")
	}
	base := strings.TrimPrefix(m[1], "v")
	rest := v[len(m[1]):]
	rest = strings.TrimPrefix(rest, "-")
	if rest == "" {
		return base
	}
	if m := describe.FindStringSubmatch(rest); m != nil {
		out := base + "+" + m[1] + ".g" + m[2]
		if m[3] != "" {
			out += ".dirty"
		}
		return out
	}
	if rest == "dirty" {
		return base + "+dirty"
	}
	return base + "~" + strings.Trim(unsafe.ReplaceAllString(rest, "."), ".")
}
