package extractive

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
)

func TestEntryName(t *testing.T) {
	for heading, want := range map[string]string{
		"shutil.rmtree(path, ignore_errors=False, onerror=None, *, dir_fd=None)":                               "shutil.rmtree()",
		"class csv.DictReader(f, fieldnames=None, restkey=None, restval=None, dialect='excel', *args, **kwds)": "csv.DictReader()",
		"coroutine asyncio.wait_for(aw, timeout)":                                                              "asyncio.wait_for()",
		"@functools.lru_cache(user_function)":                                                                  "functools.lru_cache()",
		"bin(x)":                                                                                               "bin()",
		"time.perf_counter() → float":                                                                          "time.perf_counter()",
		"os.environ":                                                                                           "os.environ",
		"re.IGNORECASE":                                                                                        "re.IGNORECASE",
		"exception KeyError":                                                                                   "KeyError",
		"str.startswith(prefix[, start[, end]])":                                                               "str.startswith()",
		"Examples":                                                                                             "",
		"Basic Usage":                                                                                          "",
		"8.1. Syntax Errors":                                                                                   "",
		"json — JSON encoder and decoder":                                                                      "",
		"os.path — Common pathname manipulations":                                                              "",
		"PyObject *PyLong_FromLong(long v)":                                                                    "",
		"GET /health":                                                                                          "",
		"lumen backup restore":                                                                                 "",
		"Decimal objects":                                                                                      "",
		"Foo(":                                                                                                 "",
	} {
		p := &passage{EvidencePassage: kgagent.EvidencePassage{HeadingPath: []string{"Page", heading}}}
		if got := entryName(p); got != want {
			t.Errorf("entryName(%q) = %q, want %q", heading, got, want)
		}
	}
	if got := entryName(&passage{EvidencePassage: kgagent.EvidencePassage{HeadingPath: []string{"bin(x)"}}, fact: true}); got != "" {
		t.Errorf("a graph fact declares nothing, got %q", got)
	}
}

// TestEntryNameQualified: a method's heading names it in part
// ("substitute(mapping={}, /, **kwds)" under class Template); its section's
// anchor is the whole dotted name, which the entry is named by. An anchor
// that is no dotted name ending with the heading's name changes nothing.
func TestEntryNameQualified(t *testing.T) {
	for _, c := range []struct{ url, heading, want string }{
		{"http://d/library/string.html#string.Template.substitute", "substitute(mapping={}, /, **kwds)", "string.Template.substitute()"},
		{"http://d/library/pathlib.html#pathlib.Path.rmdir", "Path.rmdir()", "pathlib.Path.rmdir()"},
		{"http://d/library/hashlib.html#hashlib.hash.name", "attribute hash.name", "hashlib.hash.name"},
		{"http://d/library/shutil.html#shutil.rmtree", "shutil.rmtree(path)", "shutil.rmtree()"},
		{"http://d/library/functions.html#bin", "bin(x)", "bin()"},
		{"http://d/library/mailbox.html#mailbox.Maildir.remove_folder", "remove_folder(folder)", "mailbox.Maildir.remove_folder()"},
		{"http://d/library/os.html#os.remove", "remove(path)", "os.remove()"},
		{"http://d/library/x.html#premove", "remove(path)", "remove()"},              // not a whole dotted part
		{"http://d/api/List.html#remove(java.lang.Object)", "remove(o)", "remove()"}, // not a dotted name
		{"http://d/library/os.html", "remove(path)", "remove()"},
		// Sphinx's C domain anchors "c.<name>": a C macro is no dotted name
		{"http://d/c-api/intro.html#c.Py_ABS", "Py_ABS(x)", "Py_ABS()"},
		{"http://d/c-api/typeobj.html#c.PyTypeObject.tp_richcompare.Py_RETURN_RICHCOMPARE", "Py_RETURN_RICHCOMPARE(VAL_A, VAL_B, op)", "Py_RETURN_RICHCOMPARE()"},
	} {
		p := &passage{EvidencePassage: kgagent.EvidencePassage{URL: c.url, HeadingPath: []string{"Page", c.heading}}}
		if got := entryName(p); got != c.want {
			t.Errorf("entryName(%q at %s) = %q, want %q", c.heading, c.url, got, c.want)
		}
	}
}

// page is a Python docs page's passage: its page heading, the section's own
// heading (an entry's signature or a section title) and text.
func page(url, top, heading, text string) kgagent.EvidencePassage {
	hs := []string{top}
	if heading != "" {
		hs = append(hs, heading)
	}
	return kgagent.EvidencePassage{URL: url, Title: top + " — Python 3.11 documentation", HeadingPath: hs, Text: text}
}

// TestComposeNamesTheEntryThatDoesIt: a question asking how to do
// something (in the user's words, "how do I …" or not) is answered by
// naming the function, method, class or module that does it, first, from
// the heading of the section cited for it.
func TestComposeNamesTheEntryThatDoesIt(t *testing.T) {
	faqDelete := page("http://d/faq/library.html#how-do-i-delete-a-file", "Library and Extension FAQ", "How do I delete a file? (And other file questions…)",
		"To delete a folder, the folder must be empty; os.rmdir() deletes an empty folder. Use os.remove() for a file.")
	rmtree := page("http://d/library/shutil.html#shutil.rmtree", "shutil — High-level file operations", "shutil.rmtree(path, ignore_errors=False, onerror=None, *, dir_fd=None)",
		"Delete an entire directory tree; path must point to a directory (but not a symbolic link to a directory). If ignore_errors is true, errors resulting from failed removals will be ignored.")
	bin := page("http://d/library/functions.html#bin", "Built-in Functions", "bin(x)",
		"Convert an integer number to a binary string prefixed with “0b”. The result is a valid Python expression.")
	binascii := page("http://d/library/binascii.html#binascii.b2a_hex", "binascii — Convert between binary and ASCII", "binascii.b2a_hex(data[, sep[, bytes_per_sep=1]])",
		"Return the hexadecimal representation of the binary data. Every byte of data is converted into the corresponding 2-digit hex representation.")
	urlsplit := page("http://d/library/urllib.parse.html#urllib.parse.urlsplit", "urllib.parse — Parse URLs into components", "urllib.parse.urlsplit(urlstring, scheme='', allow_fragments=True)",
		"This is similar to urlparse(), but does not split the params from the URL.\n\nChanged in version 3.10: ASCII newline and tab characters are stripped from the URL.")
	secrets := page("http://d/library/secrets.html#module-secrets", "secrets — Generate secure random numbers for managing secrets", "",
		"The module provides functions for generating tokens suitable for applications such as password resets and hard-to-guess URLs.")
	tests := []struct {
		name, q string
		ps      []kgagent.EvidencePassage
		want    string // the answer's start
	}{
		{"entry after a better-matching FAQ", "how do I delete a folder with everything in it", []kgagent.EvidencePassage{faqDelete, rmtree},
			"`shutil.rmtree()`: Delete an entire directory tree; path must point to a directory (but not a symbolic link to a directory) [2]."},
		{"built-in function, no module prefix", "show a number in binary", []kgagent.EvidencePassage{binascii, bin},
			"`bin()`: Convert an integer number to a binary string prefixed with “0b” [2]."},
		{"opening sentence, not a version note", "are tabs and newlines stripped when a url is split", []kgagent.EvidencePassage{urlsplit},
			"`urllib.parse.urlsplit()`: This is similar to urlparse(), but does not split the params from the URL [1]. Changed in version 3.10: ASCII newline and tab characters are stripped from the URL [1]."},
		{"a module's page names the module", "generate a secure token for a password reset link", []kgagent.EvidencePassage{secrets},
			"`secrets`: The module provides functions for generating tokens"},
	}
	for _, tt := range tests {
		got := Compose(tt.q, ev("", tt.ps...), Config{})
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: %q\n got %q\nwant it to start %q", tt.name, tt.q, got, tt.want)
		}
	}
}

// TestComposeNamesOnlyWhatTheSectionDeclares: no name is made up from a
// heading that is no signature, and a which/what question still names the
// module the way it did.
func TestComposeNamesOnlyWhatTheSectionDeclares(t *testing.T) {
	examples := page("http://d/library/csv.html#examples", "csv — CSV File Reading and Writing", "Examples",
		"The simplest example of reading a CSV file is to open it and loop over the reader.")
	got := Compose("How do I read a CSV file?", ev("", examples), Config{})
	if !strings.HasPrefix(got, "`csv`: The simplest example of reading a CSV file") {
		t.Errorf("answer = %q, want it to name the page's module, not the heading Examples", got)
	}
	faq := kgagent.EvidencePassage{URL: "http://lumen/faq.html#windows", Title: "FAQ", HeadingPath: []string{"FAQ", "Does Lumen run on Windows?"},
		Text: "No. Lumen runs on Linux and macOS only."}
	if got := Compose("Does Lumen run on Windows?", ev("", faq), Config{}); strings.HasPrefix(got, "`") {
		t.Errorf("answer = %q names something no heading declares", got)
	}
}

// TestComposeHowToCodeBeforeAnEntry: a better-ranked section whose code
// shows how (a command) leads a "how do I" answer before an entry
// declared further down (a setting).
func TestComposeHowToCodeBeforeAnEntry(t *testing.T) {
	create := kgagent.EvidencePassage{URL: "http://lumen/cli/lumen-token.html#create", Title: "lumen token — Lumen documentation", HeadingPath: []string{"lumen token", "lumen token create"},
		Text: "lumen token create --name NAME [--read DB]... [--write DB]... [--expires DURATION]\n\nPrints the new token once; Lumen stores only its SHA-256 hash."}
	setting := kgagent.EvidencePassage{URL: "http://lumen/configuration/security.html#auth", Title: "Security settings — Lumen documentation", HeadingPath: []string{"Security settings", "auth.enabled"},
		Text: "When true, every HTTP request must carry an API token in the header Authorization: Bearer <token>. Default: false. Create tokens with lumen token create."}
	got := Compose("How do I create an API token?", ev("", create, setting), Config{})
	if !strings.Contains(got, "```\nlumen token create --name NAME") || strings.HasPrefix(got, "`auth.enabled`") {
		t.Errorf("answer = %q, want the command's section and code first", got)
	}
}

// TestAttributeEntryName: the name Compose gives a sentence is supported
// by the section that declares it, and by no other.
func TestAttributeEntryName(t *testing.T) {
	rmtree := page("http://d/library/shutil.html#shutil.rmtree", "shutil — High-level file operations", "shutil.rmtree(path, ignore_errors=False, onerror=None, *, dir_fd=None)",
		"Delete an entire directory tree; path must point to a directory.")
	copytree := page("http://d/library/shutil.html#shutil.copytree", "shutil — High-level file operations", "shutil.copytree(src, dst, symlinks=False)",
		"Recursively copy an entire directory tree rooted at src to a directory named dst.")
	evs := ev("", copytree, rmtree)
	for answer, want := range map[string]int{
		"`shutil.rmtree()`: Delete an entire directory tree; path must point to a directory.": 2,
		"`shutil.unlink()`: Delete an entire directory tree; path must point to a directory.": 0,
	} {
		got := NewSupport(evs).Attribute(answer)
		n := 0
		if c := citationsIn(got.Text); len(c) > 0 {
			n = c[0]
		}
		if n != want {
			t.Errorf("%q: cited [%d] (%q), want [%d]", answer, n, got.Text, want)
		}
	}
}

// TestComposeWhichFunctionNamesTheEntry: "which function …" is answered by
// the entry the section declares, a built-in without a module prefix too,
// not by the page's title.
func TestComposeWhichFunctionNamesTheEntry(t *testing.T) {
	bin := page("http://d/library/functions.html#bin", "Built-in Functions", "bin(x)",
		"Convert an integer number to a binary string prefixed with “0b”. The result is a valid Python expression.")
	got := Compose("Which function converts an integer to a binary string?", ev("", bin), Config{})
	if !strings.HasPrefix(got, "`bin()`") {
		t.Errorf("answer = %q, want it to open with `bin()`", got)
	}
}

func TestEntryAttribute(t *testing.T) {
	for heading, want := range map[string]bool{
		"os.environ":                  true,
		"re.IGNORECASE":               true,
		"attribute Thread.name":       true,
		"shutil.rmtree(path)":         false,
		"exception KeyboardInterrupt": false,
		"class csv.Dialect":           false,
		"@functools.total_ordering":   false,
	} {
		if _, got := entry(&passage{EvidencePassage: kgagent.EvidencePassage{HeadingPath: []string{heading}}}); got != want {
			t.Errorf("entry(%q) attribute = %v, want %v", heading, got, want)
		}
	}
}

// TestComposeAttributeLeadsOnlyAsTheBest: a constant ("time.CLOCK_REALTIME")
// is a thing to use, not one that does something: it does not displace a
// better sentence from the lead, as a function would.
func TestComposeAttributeLeadsOnlyAsTheBest(t *testing.T) {
	howto := page("http://d/howto/timing.html#measuring", "Timing HOWTO", "Measuring elapsed time",
		"To measure how long a piece of code takes, read a monotonic clock before and after the code and subtract.")
	clock := page("http://d/library/time.html#time.CLOCK_REALTIME", "time — Time access and conversions", "time.CLOCK_REALTIME",
		"System-wide real-time clock that code can read to measure how long something takes.")
	got := Compose("measure how long code takes with a clock", ev("", howto, clock), Config{})
	if strings.HasPrefix(got, "`time.CLOCK_REALTIME`") || !strings.HasPrefix(got, "To measure how long a piece of code takes") {
		t.Errorf("answer = %q, want the better sentence first, not the constant", got)
	}
}

func TestEntityTypeClass(t *testing.T) {
	for q, want := range map[string]string{
		"Which class holds the result of a query?": "class",
		"Which modules parse JSON?":                "module",
		"What classes does csv provide?":           "class",
	} {
		if got := entityType(q); got != want {
			t.Errorf("entityType(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestComposeNamesTheEntryClosestInMeaning: of two entries whose sections
// both share enough words with a question in users' words, the one the
// semantic model finds closer to it leads (os.path.basename for "get just
// the file name from a full path", not os.DirEntry's "full path name",
// which shares more of its words); without semantic vectors the one with
// the better sentence leads, as before.
func TestComposeNamesTheEntryClosestInMeaning(t *testing.T) {
	path := page("http://d/library/os.html#os.DirEntry.path", "os — Miscellaneous operating system interfaces", "os.DirEntry.path",
		"The entry’s full path name: equivalent to os.path.join(scandir_path, entry.name).")
	basename := page("http://d/library/os.path.html#os.path.basename", "os.path — Common pathname manipulations", "os.path.basename(path)",
		"Return the base name of pathname path: the file name at its end.")
	const q = "get just the file name from a full path"
	if got := Compose(q, ev("", path, basename), Config{}); !strings.HasPrefix(got, "`os.DirEntry.path`") {
		t.Fatalf("without semantic vectors: %q, want the entry whose sentence holds more of the question first", got)
	}
	path.Semantic, basename.Semantic = 0.45, 0.54
	if got := Compose(q, ev("", path, basename), Config{}); !strings.HasPrefix(got, "`os.path.basename()`: Return the base name of pathname path") {
		t.Errorf("answer = %q, want the entry closest in meaning first", got)
	}
}

// TestComposeNamesTheEntriesCloseInMeaning: the answer ends by naming the
// other API entries found that are about as close in meaning to the
// question as the closest section, each cited, closest first; not an entry
// far in meaning, not one the answer names already, and nothing without
// semantic vectors.
func TestComposeNamesTheEntriesCloseInMeaning(t *testing.T) {
	capitalize := page("http://d/library/stdtypes.html#str.capitalize", "Built-in Types", "str.capitalize()",
		"Return a copy of the string with its first character capitalized and the rest lowercased.")
	title := page("http://d/library/stdtypes.html#str.title", "Built-in Types", "str.title()",
		"Return a titlecased version of the string where words start with an uppercase character.")
	capwords := page("http://d/library/string.html#string.capwords", "string — Common string operations", "string.capwords(s, sep=None)",
		"Split the argument into words using str.split(), capitalize each word using str.capitalize(), and join the capitalized words.")
	normalize := page("http://d/library/unicodedata.html#unicodedata.normalize", "unicodedata — Unicode Database", "unicodedata.normalize(form, unistr)",
		"Return the normal form for the Unicode string unistr.")
	const q = "capitalize the first letter of every word"
	if got := Compose(q, ev("", capitalize, title, capwords, normalize), Config{}); strings.Contains(got, "See also") {
		t.Fatalf("without semantic vectors: %q, want no entries named after the answer", got)
	}
	capitalize.Semantic, title.Semantic, capwords.Semantic, normalize.Semantic = 0.63, 0.55, 0.54, 0.32
	got := Compose(q, ev("", capitalize, title, capwords, normalize), Config{})
	if !strings.HasPrefix(got, "`str.capitalize()`: Return a copy of the string") {
		t.Fatalf("answer = %q, want the entry closest in meaning first", got)
	}
	if want := "[3].\n\nSee also `str.title()` [2] and `string.capwords()` [3]."; !strings.HasSuffix(got, want) {
		t.Errorf("answer = %q, want it to end %q", got, want)
	}
	if _, also, _ := strings.Cut(got, "See also"); strings.Contains(got, "normalize") || strings.Contains(also, "capitalize()") {
		t.Errorf("answer = %q names an entry far in meaning, or the lead again", got)
	}
}

// TestSeeAlsoNamesModulesAndWholeNames: a module's section close in meaning
// is named as the module; an entry is left out only when the answer names
// it whole ("os.removedirs(path)" does not name os.remove).
func TestSeeAlsoNamesModulesAndWholeNames(t *testing.T) {
	rmdir := page("http://d/library/os.html#os.rmdir", "os — Miscellaneous operating system interfaces", "os.rmdir(path, *, dir_fd=None)",
		"Remove (delete) the directory path; os.removedirs(path) also removes its empty parents.")
	remove := page("http://d/library/os.html#os.remove", "os — Miscellaneous operating system interfaces", "os.remove(path, *, dir_fd=None)",
		"Remove (delete) the file path.")
	shutil := page("http://d/library/shutil.html#module-shutil", "shutil — High-level file operations", "",
		"The shutil module offers a number of high-level operations on files and collections of files.")
	rmdir.Semantic, remove.Semantic, shutil.Semantic = 0.59, 0.55, 0.50
	got := Compose("delete a single file, not a folder", ev("", rmdir, remove, shutil), Config{})
	if want := "\n\nSee also `os.remove()` [2] and the `shutil` module [3]."; !strings.HasSuffix(got, want) {
		t.Errorf("answer = %q, want it to end %q", got, want)
	}
}

// TestSeeAlsoClosestFirstAtMostThree: the entries named after the answer
// are ordered by their cosine, not by where the search ranked their
// sections, at most alsoMax of them, each cited to its own section; a
// section further than alsoWithin below the closest one is not named.
func TestSeeAlsoClosestFirstAtMostThree(t *testing.T) {
	entry := func(name, text string, cos float64) kgagent.EvidencePassage {
		p := page("http://d/library/stdtypes.html#"+name, "Built-in Types", name+"()", text)
		p.Semantic = cos
		return p
	}
	ps := []kgagent.EvidencePassage{
		entry("str.capitalize", "Return a copy of the string with its first character capitalized.", 0.70),
		entry("str.lower", "Return a copy of the string converted to lowercase.", 0.52),
		entry("str.upper", "Return a copy of the string converted to uppercase.", 0.55),
		entry("str.title", "Return a titlecased version of the string.", 0.66),
		entry("str.swapcase", "Return a copy of the string with uppercase characters converted to lowercase.", 0.60),
		entry("str.casefold", "Return a casefolded copy of the string.", 0.45),
	}
	got := Compose("capitalize the first letter of a string", ev("", ps...), Config{})
	if want := "\n\nSee also `str.title()` [4], `str.swapcase()` [5] and `str.upper()` [3]."; !strings.HasSuffix(got, want) {
		t.Errorf("answer = %q, want it to end %q", got, want)
	}
}
