package release

import (
	"path"
	"regexp"
	"strings"
)

var mdLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)

// shipLinks rewrites the relative links of a markdown file at file (a
// slash path in the shipped tree) whose targets are not in shipped, into
// plain text that names them as files of the source repository: a README
// in a package must not point at files the package does not have.
func shipLinks(md, file string, shipped map[string]bool) string {
	return mdLink.ReplaceAllStringFunc(md, func(link string) string {
		m := mdLink.FindStringSubmatch(link)
		text, target := m[1], m[2]
		if linkResolves(file, target, shipped) {
			return link
		}
		if strings.Trim(text, "`") == target {
			return "`" + target + "` (in the source repository)"
		}
		return text + " (`" + target + "` in the source repository)"
	})
}

// linkResolves reports whether target, linked from file, is an external
// link, an anchor, or a file in shipped.
func linkResolves(file, target string, shipped map[string]bool) bool {
	if strings.HasPrefix(target, "#") || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return true
	}
	target, _, _ = strings.Cut(target, "#")
	return shipped[path.Join(path.Dir(file), target)]
}
