package backend

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/directaid/directaid/schema"
)

// TestSamePublicationComparesEveryField sets each field of a Publication in turn, on one side and then on
// both (in distinct memory), and checks that samePublication agrees with the JSON both marshal to: a
// field added to Publication that samePublication compares wrongly (a pointer compared by address, a
// pointee ignored) fails here.
func TestSamePublicationComparesEveryField(t *testing.T) {
	type field struct {
		name  string
		index []int
		kind  reflect.Kind
	}
	var fields []field
	var walk func(t reflect.Type, path string, index []int)
	walk = func(typ reflect.Type, path string, index []int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			at := append(append([]int{}, index...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, path+"."+f.Name, at)
				continue
			}
			fields = append(fields, field{path + "." + f.Name, at, f.Type.Kind()})
		}
	}
	walk(reflect.TypeFor[schema.Publication](), "Publication", nil)
	if len(fields) < 15 {
		t.Fatalf("walked %d fields: the walk is broken", len(fields))
	}
	set := func(p *schema.Publication, f field, variant int) {
		setVariant(t, f.name, reflect.ValueOf(p).Elem().FieldByIndex(f.index), f.kind, variant)
	}
	for _, f := range fields {
		for _, variants := range [][2]int{{0, 1}, {1, 1}, {1, 2}, {2, 2}} {
			var a, b schema.Publication
			set(&a, f, variants[0])
			set(&b, f, variants[1])
			ja, _ := json.Marshal(&a)
			jb, _ := json.Marshal(&b)
			if want, got := string(ja) == string(jb), samePublication(&a, &b); got != want {
				t.Errorf("%s, variants %v: samePublication = %v, JSON equal = %v\n%s\n%s", f.name, variants, got, want, ja, jb)
			}
		}
	}
	// The same number written another way is the same content; another number is not.
	phone := func(given, e164 string) *schema.Publication {
		return &schema.Publication{Common: schema.Common{ContactWhatsapp: given}, ContactE164: e164}
	}
	if !samePublication(phone("300 123 4567", "+573001234567"), phone("3001234567", "+573001234567")) {
		t.Error("one number written two ways compares different")
	}
	if samePublication(phone("300 123 4567", "+573001234567"), phone("300 123 4568", "+573001234568")) {
		t.Error("two numbers compare equal")
	}
	// 0 and -0 marshal differently.
	zero, negZero := 0.0, 0.0
	negZero = -negZero
	if samePublication(&schema.Publication{Place: schema.Place{Latitude: &zero}}, &schema.Publication{Place: schema.Place{Latitude: &negZero}}) {
		t.Error("0 and -0 compare equal, though their JSON differs")
	}
}

// setVariant sets fv to a value of its kind: 0 leaves it zero, 1 and 2 are two distinct values, each in
// memory of its own (a pointer field gets a fresh pointer every time).
func setVariant(t *testing.T, name string, fv reflect.Value, kind reflect.Kind, variant int) {
	if variant == 0 {
		return
	}
	switch kind {
	case reflect.String:
		fv.SetString([]string{"", "uno", "dos"}[variant])
	case reflect.Bool:
		fv.SetBool(variant == 1)
	case reflect.Int, reflect.Int64:
		fv.SetInt(int64(variant))
	case reflect.Float64:
		fv.SetFloat(float64(variant) / 3)
	case reflect.Pointer:
		p := reflect.New(fv.Type().Elem())
		setVariant(t, name, p.Elem(), fv.Type().Elem().Kind(), variant)
		fv.Set(p)
	default:
		t.Fatalf("%s: a field of kind %s; teach samePublication and this test about it", name, kind)
	}
}
