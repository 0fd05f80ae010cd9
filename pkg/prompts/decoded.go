package prompts

import (
	"context"
	"reflect"
	"strings"
)

// Decoded is a rendered payload twice: as the JSON text of the user
// message's last fence, and decoded. A model in the worker's process that
// reads the payload back (the sim) takes Value instead of decoding JSON
// again: for a large payload (an analyst's trajectories) the decoding is
// most of the call's work.
type Decoded struct {
	// JSON is the payload as the user message holds it.
	JSON string
	// Value points to the payload's input type (*AnalystInput,
	// *MergeInput, ...) and equals what decoding JSON into that type
	// gives. It is shared: read it, never change it.
	Value any
}

type decodedKey struct{}

// WithDecoded returns ctx carrying d (nil: ctx itself) for the model call
// of the rendering d came from.
func WithDecoded(ctx context.Context, d *Decoded) context.Context {
	if d == nil {
		return ctx
	}
	return context.WithValue(ctx, decodedKey{}, d)
}

// DecodedFrom returns the decoded payload ctx carries when its JSON is
// payload, the text a model found in its request: a request changed on
// its way gets nothing.
func DecodedFrom(ctx context.Context, payload string) (any, bool) {
	d, ok := ctx.Value(decodedKey{}).(*Decoded)
	if !ok || d.JSON != payload {
		return nil, false
	}
	return d.Value, true
}

// omitEmpty sets every empty slice or map held by an omitempty field of v
// (a struct, and the structs in its fields and slices) to nil: the
// encoding leaves such a field out, so a decoding of it leaves the field
// nil, and v must equal that decoding.
func omitEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := v.Field(i)
			if !t.Field(i).IsExported() {
				continue
			}
			_, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() == 0 && !f.IsNil() && hasOption(opts, "omitempty") {
				f.SetZero()
				continue
			}
			omitEmpty(f)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.String {
			return
		}
		for i := range v.Len() {
			omitEmpty(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			omitEmpty(v.Elem())
		}
	}
	// The input types' maps hold plain values (EpochInput.Counts): nothing
	// in them to walk.
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}
