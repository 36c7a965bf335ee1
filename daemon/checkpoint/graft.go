package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// graft replaces subtrees of a tree: a trie of the changed paths (whose old
// content goes) and of the new entries under them.
type graft struct {
	root  *gnode
	files []string // files that differ from the old tree
}

type gnode struct {
	kids    map[string]*gnode
	replace bool       // a changed path: its old content is dropped
	leaf    *treeEntry // the new entry at exactly this path
	under   bool       // at or under a changed path
}

func newGraft(paths []string) *graft {
	g := &graft{root: &gnode{}}
	for _, p := range paths {
		n := g.root
		for _, name := range strings.Split(p, "/") {
			n = n.kid(name)
		}
		n.replace = true
	}
	return g
}

func (n *gnode) kid(name string) *gnode {
	if n.kids == nil {
		n.kids = map[string]*gnode{}
	}
	k := n.kids[name]
	if k == nil {
		k = &gnode{under: n.under || n.replace}
		n.kids[name] = k
	}
	return k
}

// addEntry adds a new entry, which must be at or under a changed path.
func (g *graft) addEntry(p string, mode uint32, oid []byte) error {
	names := strings.Split(p, "/")
	n := g.root
	for _, name := range names {
		n = n.kid(name)
	}
	if !n.under && !n.replace {
		return fmt.Errorf("git add left %s, which is under no changed path", p)
	}
	if n.leaf != nil || len(n.kids) > 0 {
		return fmt.Errorf("%s is both a file and a directory in the index", p)
	}
	n.leaf = &treeEntry{name: names[len(names)-1], mode: mode, oid: slices.Clone(oid)}
	return nil
}

// build writes the new trees and returns the new root tree's id. Trees
// are read from cache (the trees the last incremental checkpoint read or
// made) before git; the trees read or made now are in ts.used after.
func (g *graft) build(ctx context.Context, r *repo, ts *treeSource, base []byte) ([]byte, error) {
	tw := newTreeWriter(r.hashLen, ts)
	entries, err := g.dir(ts, tw, g.root, base, "")
	if err != nil {
		return nil, err
	}
	id := tw.add(entries)
	if err := tw.write(ctx, r); err != nil {
		return nil, err
	}
	slices.Sort(g.files)
	g.files = slices.Compact(g.files)
	return id, nil
}

// dir returns the entries of the directory at n (path p), whose old tree is
// old (nil: none, or dropped), and notes in g.files the files that differ.
func (g *graft) dir(ts *treeSource, tw *treeWriter, n *gnode, old []byte, p string) ([]treeEntry, error) {
	var prev []treeEntry
	if old != nil {
		var err error
		if prev, err = ts.read(old); err != nil {
			return nil, err
		}
	}
	out := make([]treeEntry, 0, len(prev)+len(n.kids))
	byName := map[string]treeEntry{}
	for _, e := range prev {
		if _, changed := n.kids[e.name]; changed {
			byName[e.name] = e
			continue
		}
		out = append(out, e)
	}
	for name, k := range n.kids {
		kp := joinPath(p, name)
		old, hadOld := byName[name]
		if k.replace {
			if err := g.diff(ts, kp, old, hadOld, k); err != nil {
				return nil, err
			}
		}
		if k.leaf != nil {
			if len(k.kids) > 0 {
				return nil, fmt.Errorf("%s is both a file and a directory", kp)
			}
			out = append(out, *k.leaf)
			continue
		}
		var sub []byte
		if hadOld && old.isDir() && !k.replace {
			sub = old.oid
		}
		entries, err := g.dir(ts, tw, k, sub, kp)
		if err != nil {
			return nil, err
		}
		switch {
		case len(entries) > 0: // git keeps no empty directories
			out = append(out, treeEntry{name: name, mode: modeDir, oid: tw.add(entries)})
			if hadOld && !old.isDir() && !k.replace {
				g.files = append(g.files, kp) // a file replaced by the directory
			}
		case hadOld && !old.isDir() && !k.replace:
			// Only on the way to a changed path, which is gone: the file
			// here (there was no directory) did not change.
			out = append(out, old)
		}
	}
	return out, nil
}

// diff notes the files that differ between the old entry at p (if any) and
// the new content of the changed path k, as git diff-tree -r would list
// them.
func (g *graft) diff(ts *treeSource, p string, old treeEntry, hadOld bool, k *gnode) error {
	before := map[string]treeEntry{}
	if hadOld {
		if err := leavesOf(ts, p, old, before); err != nil {
			return err
		}
	}
	after := map[string]treeEntry{}
	newLeaves(p, k, after)
	for q, o := range before {
		if n, ok := after[q]; !ok || n.mode != o.mode || !bytes.Equal(n.oid, o.oid) {
			g.files = append(g.files, q)
		}
	}
	for q := range after {
		if _, ok := before[q]; !ok {
			g.files = append(g.files, q)
		}
	}
	return nil
}

// leavesOf lists the files (blobs, symlinks, gitlinks) of tree entry e at p.
func leavesOf(ts *treeSource, p string, e treeEntry, into map[string]treeEntry) error {
	if !e.isDir() {
		into[p] = e
		return nil
	}
	entries, err := ts.read(e.oid)
	if err != nil {
		return err
	}
	for _, c := range entries {
		if err := leavesOf(ts, joinPath(p, c.name), c, into); err != nil {
			return err
		}
	}
	return nil
}

func newLeaves(p string, k *gnode, into map[string]treeEntry) {
	if k.leaf != nil {
		into[p] = *k.leaf
		return
	}
	for name, c := range k.kids {
		newLeaves(joinPath(p, name), c, into)
	}
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
