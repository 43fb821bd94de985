package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/kgagent/kgagent"
)

// decodeArgs checks raw tool arguments against the input schema and
// decodes them into dst. Errors: EINVALID naming the argument and what is
// wrong with it in words ("k must be between 1 and 100, not 500"), with the
// argument in details.field.
func decodeArgs(raw json.RawMessage, schema *jsonschema.Resolved, dst any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return kgagent.Errorf(kgagent.EINVALID, "arguments are not valid JSON: %v", err)
	}
	if err := checkArgs(v, schema.Schema()); err != nil {
		return err
	}
	// The full validator backs the readable checks up.
	if err := schema.Validate(v); err != nil {
		return kgagent.Errorf(kgagent.EINVALID, "arguments: %s", strings.TrimPrefix(err.Error(), "validating root: "))
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return kgagent.Errorf(kgagent.EINVALID, "arguments: %v", err)
	}
	return nil
}

// argError is an EINVALID error about one argument.
func argError(field, format string, args ...any) error {
	e := kgagent.Errorf(kgagent.EINVALID, format, args...)
	e.Details = map[string]any{"field": field}
	return e
}

// checkArgs checks v against the constraints kgagent's tool schemas use
// (an object of strings, integers, booleans and string lists, with
// required, bounds, lengths and enums) and says what is wrong in words.
func checkArgs(v any, s *jsonschema.Schema) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return kgagent.Errorf(kgagent.EINVALID, "arguments must be a JSON object, not %s", jsonKind(v))
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, known := s.Properties[name]; !known {
			return argError(name, "unknown argument %q (this tool takes: %s)", name, strings.Join(propertyNames(s), ", "))
		}
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return argError(name, "%s is required", name)
		}
	}
	for _, name := range names {
		if err := checkArg(name, obj[name], s.Properties[name]); err != nil {
			return err
		}
	}
	return nil
}

// propertyNames lists a schema's properties in their declared order.
func propertyNames(s *jsonschema.Schema) []string {
	if len(s.PropertyOrder) == len(s.Properties) {
		return s.PropertyOrder
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func checkArg(name string, v any, s *jsonschema.Schema) error {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !hasKind(types, v) {
		want := make([]string, len(types))
		for i, t := range types {
			want[i] = article(t)
		}
		return argError(name, "%s must be %s, not %s", name, strings.Join(want, " or "), jsonKind(v))
	}
	switch x := v.(type) {
	case float64:
		lo, hi := s.Minimum, s.Maximum
		switch {
		case lo != nil && hi != nil && (x < *lo || x > *hi):
			return argError(name, "%s must be between %s and %s, not %s", name, num(*lo), num(*hi), num(x))
		case lo != nil && x < *lo:
			return argError(name, "%s must be at least %s, not %s", name, num(*lo), num(x))
		case hi != nil && x > *hi:
			return argError(name, "%s must be at most %s, not %s", name, num(*hi), num(x))
		}
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			if *s.MinLength == 1 {
				return argError(name, "%s must not be empty", name)
			}
			return argError(name, "%s must have at least %d characters", name, *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			// Every maxLength of kgagent's tools is a size limit (the
			// question's, kgagent.MaxQuestionBytes): TOO_LARGE, as on
			// every other transport.
			e := kgagent.Errorf(kgagent.ETOOLARGE, "%s is %d characters long, over the limit of %d", name, n, *s.MaxLength)
			e.Details = map[string]any{"field": name, "limit": *s.MaxLength}
			return e
		}
		if len(s.Enum) > 0 {
			allowed := make([]string, len(s.Enum))
			ok := false
			for i, e := range s.Enum {
				allowed[i] = fmt.Sprint(e)
				ok = ok || e == x
			}
			if !ok {
				return argError(name, "%s must be one of %s, not %q", name, strings.Join(allowed, ", "), x)
			}
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return argError(name, "%s needs at least %d item(s)", name, *s.MinItems)
		}
		if s.Items != nil {
			for i, item := range x {
				if err := checkArg(fmt.Sprintf("%s[%d]", name, i), item, s.Items); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hasKind reports whether v is of one of the JSON Schema types.
func hasKind(types []string, v any) bool {
	for _, t := range types {
		switch x := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case float64:
			if t == "number" || t == "integer" && x == math.Trunc(x) {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		}
	}
	return false
}

// jsonKind names a decoded JSON value's kind for a message, with the value
// when it is short.
func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case float64:
		return "the number " + num(x)
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "an array"
	}
	return "an object"
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func num(f float64) string {
	return fmt.Sprint(f)
}
