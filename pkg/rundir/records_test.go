package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
)

// fill sets every exported field of v, recursively, to a distinct
// non-zero value (a counter), so that each field shows in the JSON.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, n)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, n)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), e))
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	}
}

// The records' JSON is what run dirs already hold: testdata/records.json
// was written by the coordinator's own StepRecord and Summary before they
// moved here, with every field set and with none. A renamed, reordered,
// dropped or added field (or a changed omitempty) shows as a difference.
func TestRecordsKeepTheirJSON(t *testing.T) {
	t.Parallel()
	var step StepRecord
	var sum Summary
	for _, v := range []any{&step, &sum} {
		n := 0
		fill(reflect.ValueOf(v).Elem(), &n)
	}
	// Unset fields too: omitempty leaves out what it left out.
	got, err := json.MarshalIndent(map[string]any{"step_record": &step, "summary": &sum,
		"empty_step_record": &StepRecord{}, "empty_summary": &Summary{}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/records.json")
	if err != nil {
		t.Fatal(err)
	}
	if got = append(got, '\n'); !bytes.Equal(got, want) {
		t.Errorf("records marshal to\n%s\nwant (testdata/records.json)\n%s", got, want)
	}
}
