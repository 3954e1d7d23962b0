// Package nilcheck holds the module's test of its convention for methods
// on nil pointers: they never panic, and those that return an error return
// one. It imports only the standard library, so that every package's tests
// can use it.
package nilcheck

import (
	"reflect"
	"testing"
)

// Methods calls every exported method of each typed nil pointer in
// nils with zero arguments (a nil context, nil functions, empty options)
// and fails t for each call that panics: a method on a nil pointer must
// return an error value or a zero value, never crash the caller. Methods
// that return an error must return a non-nil one.
func Methods(t *testing.T, nils ...any) {
	t.Helper()
	for _, v := range nils {
		rv := reflect.ValueOf(v)
		rt := rv.Type()
		for i := range rt.NumMethod() {
			m := rt.Method(i)
			name := rt.String() + "." + m.Name
			ft := m.Func.Type()
			n := ft.NumIn() - 1 // the receiver
			if ft.IsVariadic() {
				n--
			}
			args := []reflect.Value{rv}
			for j := 1; j <= n; j++ {
				args = append(args, reflect.Zero(ft.In(j)))
			}
			out, panicked := callSafely(m.Func, args)
			if panicked != nil {
				t.Errorf("%s on a nil receiver panicked: %v", name, panicked)
				continue
			}
			if k := len(out); k > 0 && ft.Out(k-1) == errorType && out[k-1].IsNil() {
				t.Errorf("%s on a nil receiver returned a nil error", name)
			}
		}
	}
}

var errorType = reflect.TypeFor[error]()

func callSafely(fn reflect.Value, args []reflect.Value) (out []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	return fn.Call(args), nil
}
