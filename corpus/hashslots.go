package corpus

// hashSlots is an open-addressing table of 64-bit hashes kept in order of
// first occurrence: the lexical embedder's features (lexScratch) and a
// chunk's terms (termTable) each embed one beside the values they keep per
// hash, and probe and insert with their own test for a match (inline: a
// call per new hash costs the embedder ~15%). An insert appends the hash
// to keys, stores len(keys) in its empty slot, and grows the table once it
// is more than half full.
type hashSlots struct {
	slots []int32  // 1 + index into keys, 0 = empty
	shift uint     // 64 - log2(len(slots))
	keys  []uint64 // the hashes, in order of first occurrence
}

// setTable makes the table 1<<bits slots, all empty.
func (t *hashSlots) setTable(bits uint) {
	size := 1 << bits
	if cap(t.slots) < size {
		t.slots = make([]int32, size)
	} else {
		t.slots = t.slots[:size]
		clear(t.slots)
	}
	t.shift = 64 - bits
}

// slot is where the probe for hash h starts (Fibonacci hashing: the top
// bits of h times 2^64/phi, as FNV's low bits mix poorly).
func (t *hashSlots) slot(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> t.shift }

// grow doubles the table and re-inserts the keys.
func (t *hashSlots) grow() {
	t.setTable(64 - t.shift + 1)
	mask := uint64(len(t.slots) - 1)
	for k, h := range t.keys {
		i := t.slot(h)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = int32(k + 1)
	}
}
