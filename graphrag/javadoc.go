package graphrag

import (
	"regexp"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// PredImplements is a Java class implementing an interface (Javadoc's "All
// Implemented Interfaces:").
const PredImplements = "implements"

var (
	reJavaTypeHead = regexp.MustCompile(`^(Class|Interface|Enum Class|Enum|Record Class|Record|Annotation Interface) ([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:<.*>)?$`)
	reJavaTypeSig  = regexp.MustCompile(`\b(?:class|interface|enum|record|@interface) [A-Za-z_][\w.]*(?:<[^>]*>)?(?:\([^)]*\))? ?(?:extends ([\w.<>, ?]+?))?(?: implements ([\w.<>, ?]+))?$`)
	reJavaDeprec   = regexp.MustCompile(`@Deprecated\(since="([\d.]+)"`)
	reJavaIdent    = regexp.MustCompile(`^[A-Za-z_][\w.]*`)
)

// javadoc reads the entries of a Javadoc page (OpenJDK's API docs): the
// type heading ("Class FileInputStream") with its signature (extends →
// subclass_of), "All Implemented Interfaces:" (implements), "Since:"
// (added_in) and description, and each member section under "Method
// Details" (h3 "read", anchor "read()"): the type defines the member, its
// description, "Parameters:", "Throws:" (raises), "Since:" and
// @Deprecated(since=…). Types are named as Javadoc titles them
// (FileInputStream, FileInputStream.read), the package defining the type.
// It returns the entity the section is about ("" id when none).
func (e *extraction) javadoc(s *kgagent.Section) kgagent.Entity {
	h := strings.TrimSpace(s.Heading)
	if m := reJavaTypeHead.FindStringSubmatch(h); m != nil && s.Level <= 1 {
		typ := TypeClass
		if strings.HasSuffix(m[2], "Exception") || strings.HasSuffix(m[2], "Error") {
			typ = TypeException
		}
		cls := NewEntity(m[2], typ)
		e.jclass = cls
		if pkg := e.javaPackage(); pkg != "" {
			e.emit(NewEntity(pkg, TypeModule), PredDefines, cls, "", s.Anchor, "")
		}
		sig, described := false, false
		for _, bl := range s.Blocks {
			switch bl.Kind {
			case kgagent.BlockParagraph:
				t := strings.TrimSpace(bl.Text)
				if !sig {
					if m := reJavaTypeSig.FindStringSubmatch(t); m != nil && strings.Contains(t, " "+cls.Name) {
						sig = true
						for _, sup := range javaNames(m[1]) {
							e.emit(cls, PredSubclassOf, NewEntity(sup, typ), "", s.Anchor, t)
						}
						for _, in := range javaNames(m[2]) {
							e.emit(cls, PredImplements, NewEntity(in, TypeClass), "", s.Anchor, t)
						}
					}
				} else if !described && t != "" {
					// the first paragraph after the signature describes it
					described = true
					e.emit(cls, PredIsDefinedAs, kgagent.Entity{}, text.Clip(t, 600), s.Anchor, t)
				}
			case kgagent.BlockDefList:
				for _, d := range bl.Terms {
					if strings.TrimSpace(d.Term) == "All Implemented Interfaces:" {
						for _, in := range javaNames(d.Definition) {
							e.emit(cls, PredImplements, NewEntity(in, TypeClass), "", s.Anchor, d.Definition)
						}
					}
				}
			}
		}
		e.javaNotes(s, cls)
		return cls
	}
	if e.jclass.ID == "" || !strings.Contains(s.Anchor, "(") || strings.HasPrefix(s.Anchor, "<init>") || !isIdent(h) {
		return kgagent.Entity{}
	}
	m := NewEntity(e.jclass.Name+"."+h, TypeMethod)
	e.emit(e.jclass, PredDefines, m, "", s.Anchor, "")
	sig := ""
	for _, bl := range s.Blocks {
		if bl.Kind != kgagent.BlockParagraph {
			continue
		}
		t := strings.TrimSpace(bl.Text)
		if sig == "" && strings.Contains(t, h+"(") {
			sig = t
			continue
		}
		if t != "" {
			e.emit(m, PredIsDefinedAs, kgagent.Entity{}, text.Clip(t, 600), s.Anchor, t)
			break
		}
	}
	if sig != "" {
		e.emit(m, PredHasSignature, kgagent.Entity{}, sig, s.Anchor, "")
	}
	if d := reJavaDeprec.FindStringSubmatch(sig); d != nil {
		e.emit(m, PredDeprecatedSince, kgagent.Entity{}, d[1], s.Anchor, "")
	}
	e.javaNotes(s, m)
	return m
}

// javaNotes reads a Javadoc entry's notes (dl class="notes"): Parameters:,
// Throws: (each following untitled entry continues the last title) and
// Since:.
func (e *extraction) javaNotes(s *kgagent.Section, ent kgagent.Entity) {
	for _, bl := range s.Blocks {
		if bl.Kind != kgagent.BlockDefList {
			continue
		}
		title := ""
		for _, d := range bl.Terms {
			if t := strings.TrimSpace(d.Term); t != "" {
				title = t
			}
			def := strings.TrimSpace(d.Definition)
			first := reJavaIdent.FindString(def)
			switch title {
			case "Parameters:":
				if first != "" {
					e.emit(ent, PredHasParameter, kgagent.Entity{}, first, s.Anchor, def)
				}
			case "Throws:":
				if first != "" {
					e.emit(ent, PredRaises, NewEntity(lastPart(first), TypeException), "", s.Anchor, def)
				}
			case "Since:":
				if v := strings.Fields(def); len(v) > 0 {
					e.emit(ent, PredAddedIn, kgagent.Entity{}, v[0], s.Anchor, "")
				}
			}
		}
	}
}

// javaPackage is the package a Javadoc page names in its header ("Package
// java.io").
func (e *extraction) javaPackage() string {
	for _, s := range e.doc.Sections {
		if s.Level > 1 {
			break
		}
		for _, bl := range s.Blocks {
			if p, ok := strings.CutPrefix(strings.TrimSpace(bl.Text), "Package "); ok && isIdent(p) {
				return p
			}
		}
	}
	return ""
}

// javaNames splits "Closeable, AutoCloseable" or "AbstractList<E>" into
// simple type names (type arguments dropped).
func javaNames(list string) []string {
	var out []string
	depth := 0
	var b strings.Builder
	flush := func() {
		if n := strings.TrimSpace(b.String()); n != "" && isIdent(n) {
			out = append(out, lastPart(n))
		}
		b.Reset()
	}
	for _, r := range list {
		switch {
		case r == '<':
			depth++
		case r == '>':
			depth--
		case depth > 0:
		case r == ',':
			flush()
		default:
			b.WriteRune(r)
		}
	}
	flush()
	return out
}
