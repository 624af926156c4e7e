package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// object lists the field names a JSON object may have, exactly as spelt.
// encoding/json matches names case-insensitively and lets unknown ones pass;
// the planner's input is a contract, so both are errors here.
type object struct {
	fields []string
	// values gives, for a field holding a map of objects, what each of
	// those objects may contain.
	values map[string]*object
}

var (
	clusterFields     = &object{fields: []string{"minReplicas", "maxReplicas", "weight"}}
	preferencesFields = &object{
		fields: []string{"rebalance", "clusters"},
		values: map[string]*object{"clusters": clusterFields},
	}
)

// decodeStrict decodes the one JSON object in data into v.
func decodeStrict(data []byte, v any, shape *object) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return errors.New("no input: want one JSON object")
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("want a JSON object, got %s", describeStart(trimmed))
	}
	if err := shape.check(trimmed, ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// check reports the first field of the object in data that shape does not
// allow. Data that is not an object is left for the decoder to report.
func (shape *object) check(data []byte, path string) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !contains(shape.fields, name) {
			return fmt.Errorf("%sunknown field %q (want one of: %s)", path, name, strings.Join(shape.fields, ", "))
		}
		inner, ok := shape.values[name]
		if !ok {
			continue
		}
		var entries map[string]json.RawMessage
		if json.Unmarshal(fields[name], &entries) != nil {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(entries)) {
			if err := inner.check(entries[key], fmt.Sprintf("%s%s[%q]: ", path, name, key)); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsonError rewrites encoding/json's errors, which speak of Go types, in the
// terms of the input.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "input"
		}
		return fmt.Errorf("%s: want %s, got %s", field, describeType(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("malformed JSON: input ends before the object does")
	}
	return err
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem()) + " or null"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

func describeStart(data []byte) string {
	switch data[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	if len(data) > 20 {
		data = data[:20]
	}
	return fmt.Sprintf("%q", data)
}
