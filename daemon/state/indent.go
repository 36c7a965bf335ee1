package state

import "bytes"

// jsonIndent is the indent of every JSON file the daemon writes.
const jsonIndent = "  "

// appendIndented appends src, compact JSON as encoding/json writes it
// (valid, no space outside strings), indented as json.Indent(dst, src, "",
// jsonIndent) would: a line per member and element, "key": value, and {}
// and [] kept whole. It copies runs of bytes rather than stepping a
// scanner through each one: for the records a burst of ends writes, the
// indent was a third of their encoding.
func appendIndented(dst, src []byte) []byte {
	depth := 0
	// open: the byte before was { or [; what follows either closes it at
	// once ({} and []) or begins the first line inside.
	open := false
	for i := 0; i < len(src); {
		c := src[i]
		if open {
			open = false
			if c == '}' || c == ']' {
				dst = append(dst, c)
				i++
				continue
			}
			depth++
			dst = newLine(dst, depth)
		}
		switch c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end
			continue
		case '{', '[':
			open = true
			dst = append(dst, c)
		case ',':
			dst = newLine(append(dst, c), depth)
		case ':':
			dst = append(dst, ':', ' ')
		case '}', ']':
			depth--
			dst = append(newLine(dst, depth), c)
		default:
			// A number, true, false or null: up to the next delimiter.
			j := i + 1
			for j < len(src) && !isDelimiter(src[j]) {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		i++
	}
	return dst
}

// stringEnd is the index just past the string that begins at src[i], a
// quote: a quote after an odd run of backslashes is escaped, inside it.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			break
		}
		j += k
		backslashes := 0
		for b := j - 1; b > i && src[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1
		}
	}
	return len(src)
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

func newLine(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, jsonIndent...)
	}
	return dst
}
