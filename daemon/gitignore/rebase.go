// Package gitignore holds what the watcher and the checkpointer both need
// of gitignore patterns written relative to a project (its sessiond.toml's
// [watch] ignore): their rebasing onto the repository git runs in, where
// the project is a subdirectory of a repository or holds a nested one.
// Matching itself is git's (check-ignore, add), never reimplemented.
package gitignore

import "strings"

// Rebase rewrites gitignore patterns written relative to the project
// root for a domain: up is the project root relative to the repository top
// (the project is a subdirectory of a repository), down the domain relative
// to the project root (a nested repository). Unanchored patterns match at any
// depth and stay as they are; anchored ones are moved, or dropped when they
// cannot match inside the nested repository.
func Rebase(patterns []string, up, down string) []string {
	out := make([]string, 0, len(patterns))
	for _, p := range patterns {
		p = strings.TrimRight(p, "\r")
		if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "#") {
			continue
		}
		neg := ""
		if strings.HasPrefix(p, "!") {
			neg, p = "!", p[1:]
		}
		if !strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			out = append(out, neg+p)
			continue
		}
		q := strings.TrimPrefix(p, "/")
		switch {
		case down != "":
			if strings.HasPrefix(q, "**/") {
				out = append(out, neg+q)
			} else if rest, ok := strings.CutPrefix(q, down+"/"); ok && rest != "" {
				out = append(out, neg+"/"+rest)
			}
		case up != "":
			out = append(out, neg+"/"+up+"/"+q)
		default:
			out = append(out, neg+p)
		}
	}
	return out
}
