package graphrag

import "strings"

// firstIndexes returns, for each pattern, strings.Index(text, pattern): the
// patterns of four bytes or more are found in one pass over text (the link
// texts of a page, searched one by one, were a fifth of the extractor's
// time on pages with many links, most of it scanning whole pages for texts
// that are not there). Shorter patterns are searched one by one.
//
// The pass keeps the patterns in a hash table by their first four bytes and
// slides a four-byte window over text; a pattern is compared only where its
// first four bytes hash to the window's slot, and leaves the table once
// found, so the result is the first position where it occurs. The pass ends
// once every pattern is found.
func firstIndexes(text string, pats []string) []int {
	at := make([]int, len(pats))
	long := 0
	for i, p := range pats {
		if len(p) < 4 || len(p) > len(text) {
			at[i] = strings.Index(text, p)
			continue
		}
		at[i] = -1
		long++
	}
	if long == 0 {
		return at
	}
	bits := 8
	for 1<<bits < 4*long && bits < 16 {
		bits++
	}
	shift := 32 - bits
	head := make([]int32, 1<<bits) // slot -> first pattern (index+1), 0 when none
	next := make([]int32, len(pats))
	for i, p := range pats {
		if at[i] != -1 || len(p) < 4 || len(p) > len(text) {
			continue
		}
		h := (key4(p) * 0x9E3779B1) >> shift
		next[i] = head[h]
		head[h] = int32(i + 1)
	}
	left := long
	k := uint32(text[0])<<8 | uint32(text[1])<<16 | uint32(text[2])<<24
	for i := 0; i+4 <= len(text); i++ {
		k = k>>8 | uint32(text[i+3])<<24 // text[i:i+4], little-endian
		h := (k * 0x9E3779B1) >> shift
		if head[h] == 0 {
			continue
		}
		prev := int32(0)
		for c := head[h]; c != 0; {
			p := pats[c-1]
			nc := next[c-1]
			if len(p) <= len(text)-i && text[i:i+len(p)] == p {
				at[c-1] = i
				left--
				if prev == 0 {
					head[h] = nc
				} else {
					next[prev-1] = nc
				}
			} else {
				prev = c
			}
			c = nc
		}
		if left == 0 {
			break
		}
	}
	return at
}

// key4 is p's first four bytes, little-endian.
func key4(p string) uint32 {
	return uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
}
