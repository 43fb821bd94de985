package extractive

import (
	"regexp"
	"strings"
)

// An API entry is a section that declares one function, method, class or
// attribute: its heading is the entry's signature, as Sphinx (and most API
// doc generators) write it: "shutil.rmtree(path, ignore_errors=False, …)",
// "class csv.DictReader(f, fieldnames=None, …)", "coroutine
// asyncio.wait_for(aw, timeout)", "@functools.lru_cache(user_function)",
// "bin(x)", "os.environ", "exception KeyError". Its section says what the
// entry does, so an answer to "how do I …" that leads with such a section
// can name the thing that does it from the section it cites.

// entryRe matches a signature heading: an optional declaration word (or
// "@"), the entry's name, then its parameter list, its end, or a type or
// value annotation.
var entryRe = regexp.MustCompile(`^(?:(class|exception|method|classmethod|staticmethod|abstractmethod|coroutine|async|awaitable|property|attribute|data|function|decorator)\s+|@)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(|$|\s*(?::|=|→|->)\s)`)

// entryName returns the name a section declares when its own heading is an
// API entry's signature: "shutil.rmtree()" for a callable (its parameter
// list shown as "()"), "os.environ" for an attribute, "" when the heading
// is no signature. A bare word is a name only after a declaration word
// ("exception KeyError"), or followed by its parameter list ("bin(x)"):
// "Examples" is a heading, not a name.
func entryName(p *passage) string {
	name, _ := entry(p)
	return name
}

// entry returns entryName and whether the entry is an attribute or a
// constant (os.environ, re.IGNORECASE, "attribute Thread.name"): a thing to
// use rather than one that does something, unlike a callable, a class or
// an exception.
func entry(p *passage) (name string, attribute bool) {
	if p.fact || len(p.HeadingPath) == 0 {
		return "", false
	}
	h := strings.TrimSpace(p.HeadingPath[len(p.HeadingPath)-1])
	m := entryRe.FindStringSubmatch(h)
	if m == nil {
		return "", false
	}
	decl, name, after := m[1], m[2], m[3]
	switch {
	case after == "(":
		if !strings.Contains(h[len(m[0]):], ")") {
			return "", false // "Foo(" with no closing parenthesis is prose
		}
		return qualified(p.URL, name) + "()", false
	case decl == "class" || decl == "exception":
		return qualified(p.URL, name), false
	case decl != "" || strings.HasPrefix(h, "@") || strings.Contains(name, "."):
		return qualified(p.URL, name), !strings.HasPrefix(h, "@")
	}
	return "", false
}

// qualified returns the full dotted name of an entry its heading names in
// part: Sphinx writes a method's heading as "substitute(mapping={}, …)" or
// "Path.rmdir()" under its class, and anchors the section with the whole
// name ("#string.Template.substitute"), which says whose method it is. So
// when the URL's fragment is a dotted name that ends with name (as whole
// dotted parts), that fragment is the name; otherwise name as written.
// Sphinx's C domain anchors its entries "c.<name>" ("#c.Py_ABS",
// "#c.PyTypeObject.tp_richcompare.Py_RETURN_RICHCOMPARE"): a C name is not
// dotted, so such a fragment names nothing more than the heading does.
func qualified(url, name string) string {
	i := strings.LastIndexByte(url, '#')
	if i < 0 {
		return name
	}
	frag := url[i+1:]
	if len(frag) <= len(name) || !strings.HasSuffix(frag, "."+name) || !moduleNameRe.MatchString(frag) || strings.HasPrefix(frag, "c.") {
		return name
	}
	return frag
}
