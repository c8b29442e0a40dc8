package config

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// MarshalJSON renders the configuration for directord --dump-config:
// durations as Go duration strings ("1.5s"), addresses as text, and
// positions as "file:line".
func (c *Config) MarshalJSON() ([]byte, error) {
	type plain Config // without this method
	return json.Marshal(toJSONValue(reflect.ValueOf((*plain)(c)).Elem()))
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	posType       = reflect.TypeFor[Pos]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// toJSONValue converts v into maps, slices and scalars that encoding/json
// writes as wanted, honouring the json tags' names, omitempty and omitzero.
func toJSONValue(v reflect.Value) any {
	switch {
	case v.Type() == durationType:
		return time.Duration(v.Int()).String()
	case v.Type() == posType:
		return v.Interface().(Pos).String()
	case v.Type().Implements(textMarshaler) && v.Kind() != reflect.Pointer:
		b, _ := v.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return toJSONValue(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return []any{}
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toJSONValue(v.Index(i))
		}
		return out
	case reflect.Struct:
		out := orderedMap{}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if f.Anonymous && tag == "" {
				// An embedded struct's fields are its holder's, as
				// encoding/json has them (Checker's CheckerSpec, a real
				// server's RealServerExtra); nil adds none.
				if inner, ok := toJSONValue(fv).(orderedMap); ok {
					out = append(out, inner...)
				}
				continue
			}
			if (strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")) && fv.IsZero() {
				continue
			}
			if strings.Contains(opts, "omitempty") && fv.Kind() == reflect.Slice && fv.Len() == 0 {
				continue
			}
			out = append(out, kv{name, toJSONValue(fv)})
		}
		return out
	}
	return v.Interface()
}

type kv struct {
	k string
	v any
}

// orderedMap keeps the model's field order in the output.
type orderedMap []kv

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
