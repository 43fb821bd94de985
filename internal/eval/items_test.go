package eval

import "testing"

// TestNamedItems checks how eval counts the gold items an answer names:
// dotted names by their last part as a whole word, values as written.
func TestNamedItems(t *testing.T) {
	answer := "shutil provides:\n- `shutil.copyfile()` copies [1]\n- copy2 [2]\nDefault: 0o777; header 'Set-Cookie:'."
	for _, c := range []struct {
		items []string
		want  int
	}{
		{[]string{"shutil.copyfile"}, 1},
		{[]string{"shutil.copy"}, 0}, // copy2 and copyfile are other names
		{[]string{"shutil.copy2", "shutil.copyfile", "shutil.move"}, 2},
		{[]string{"0o777", "'Set-Cookie:'"}, 2},
		{[]string{"0o7777"}, 0},
		{[]string{"sys.stderr"}, 0},
	} {
		if got := namedItems(answer, c.items); got != c.want {
			t.Errorf("namedItems(%v) = %d, want %d", c.items, got, c.want)
		}
	}
}
