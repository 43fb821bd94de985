package agent

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema that command parameters use (Forge's
// JSONSchema): type, description, properties, required, items and enum.
// It is hand-written: command parameters need only this subset, declared
// in agent files (hence the yaml tags), and it is a few dozen lines. The
// gateway validates response_format and MCP arguments with
// github.com/google/jsonschema-go instead (see DECISIONS.md).
type Schema struct {
	Type        string             `json:"type,omitempty" yaml:"type,omitempty"` // object, array, string, integer, number, boolean, null
	Description string             `json:"description,omitempty" yaml:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty" yaml:"properties,omitempty"`
	Required    []string           `json:"required,omitempty" yaml:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty" yaml:"items,omitempty"`
	Enum        []any              `json:"enum,omitempty" yaml:"enum,omitempty"`
}

// Validate reports the first way v (decoded JSON) breaks the schema.
func (s *Schema) Validate(v any) error { return s.validate("$", v) }

func (s *Schema) validate(path string, v any) error {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "", "any":
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object", path)
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: missing required property %q", path, r)
			}
		}
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if x, ok := m[k]; ok {
				if err := s.Properties[k].validate(path+"."+k, x); err != nil {
					return err
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array", path)
		}
		for i, x := range a {
			if err := s.Items.validate(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: want a string", path)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: want a number", path)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) {
			return fmt.Errorf("%s: want an integer", path)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean", path)
		}
	case "null":
		if v != nil {
			return fmt.Errorf("%s: want null", path)
		}
	default:
		return fmt.Errorf("%s: unknown schema type %q", path, s.Type)
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				return nil
			}
		}
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = fmt.Sprint(e)
		}
		return fmt.Errorf("%s: want one of %s", path, strings.Join(vals, ", "))
	}
	return nil
}
