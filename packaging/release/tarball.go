package release

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// tarball writes sessiond-VERSION-OS-ARCH.tar.gz for t and returns its
// path. Entries are sorted, owned by root, stamped with the source time.
func (b *builder) tarball(t Target, bin string) (string, error) {
	top := fmt.Sprintf("sessiond-%s-%s-%s", b.Version, t.OS, t.Arch)
	dst := filepath.Join(b.Dist, top+".tar.gz")
	f, err := os.Create(dst)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewWriterLevel(f, gzip.DefaultCompression)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(gz)

	entries := b.gen.tarballContents(t.OS, bin)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	dirs := map[string]bool{}
	header := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: b.mtime, Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(header(top+"/", 0o755, tar.TypeDir, 0)); err != nil {
		return "", err
	}
	for _, e := range entries {
		// Parent directories first, each once.
		var parents []string
		for d := path.Dir(e.path); d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if !dirs[parents[i]] {
				dirs[parents[i]] = true
				if err := tw.WriteHeader(header(top+"/"+parents[i]+"/", 0o755, tar.TypeDir, 0)); err != nil {
					return "", err
				}
			}
		}
		src, err := os.Open(e.src)
		if err != nil {
			return "", err
		}
		fi, err := src.Stat()
		if err == nil {
			err = tw.WriteHeader(header(top+"/"+e.path, int64(e.mode.Perm()), tar.TypeReg, fi.Size()))
		}
		if err == nil {
			_, err = io.Copy(tw, src)
		}
		src.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return dst, f.Close()
}
