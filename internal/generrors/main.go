// Command generrors writes decode/answers_gen.go: where every Kafka
// response keeps its error codes, for every API key and version that
// franz-go's kmsg knows.
//
// kmsg decodes every response body but says nowhere which of its struct
// fields exist in which version: a field a version lacks is left at its
// default after ReadFrom, indistinguishable from a code of 0. This program
// finds out by asking kmsg itself: for each response type and version it
// fills every int16 field whose name ends in ErrorCode with its own marker
// value (slices get one element, so nested items exist), encodes the value
// at that version with kmsg, decodes it back, and keeps the fields whose
// marker survived. For the top-level ErrorCode it also finds its byte
// offset in the body when every field before it has a fixed size (a second
// encoding with longer strings and more items must put it at the same
// place): the decoder then reads that code from the first bytes of a
// response without buffering or decoding the rest.
//
// The output is committed; rerun after a kmsg upgrade:
//
//	go run ./internal/generrors -o decode/answers_gen.go
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxKey bounds the keys asked of kmsg.ResponseForKey.
const maxKey = 200

// markerBase is the first marker value; marker i is markerBase+i. 0x7Dxx
// is no error code Kafka has, and its bytes do not occur in the filler.
const markerBase = 0x7D00

// step is one hop from a struct to the field holding an error code.
type step struct {
	field string
	slice bool // the field is a slice of structs: every element is visited
	ptr   bool // the field is a pointer to a struct
}

// path is a sequence of steps ending at an int16 field.
type path []step

func (p path) String() string {
	var parts []string
	for _, s := range p {
		parts = append(parts, s.field)
	}
	return strings.Join(parts, ".")
}

func (p path) top() bool { return len(p) == 1 }

// layout is what one version of one response says about its codes.
type layout struct {
	version  int16
	present  []bool // by path index
	topFixed int    // byte offset of the top-level code, -1 when not fixed
	bad      bool   // kmsg could not read back its own encoding
}

type api struct {
	key      int16
	typeName string
	maxV     int16
	paths    []path
	layouts  []layout
}

func main() {
	out := flag.String("o", "decode/answers_gen.go", "file to write")
	flag.Parse()
	var apis []api
	for k := int16(0); k <= maxKey; k++ {
		r := kmsg.ResponseForKey(k)
		if r == nil {
			continue
		}
		a, err := probe(k, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "generrors:", err)
			os.Exit(1)
		}
		apis = append(apis, a)
	}
	src, err := render(apis)
	if err != nil {
		fmt.Fprintln(os.Stderr, "generrors:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "generrors:", err)
		os.Exit(1)
	}
}

// codePaths lists the int16 fields named *ErrorCode reachable from t.
func codePaths(t reflect.Type, prefix path, depth int) []path {
	var out []path
	if depth > 8 {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		here := append(append(path(nil), prefix...), step{field: f.Name})
		switch {
		case f.Type.Kind() == reflect.Int16 && strings.HasSuffix(f.Name, "ErrorCode"):
			out = append(out, here)
		case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(kmsg.Tags{}):
			out = append(out, codePaths(f.Type, here, depth+1)...)
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			here[len(here)-1].ptr = true
			out = append(out, codePaths(f.Type.Elem(), here, depth+1)...)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			here[len(here)-1].slice = true
			out = append(out, codePaths(f.Type.Elem(), here, depth+1)...)
		}
	}
	return out
}

func probe(key int16, r kmsg.Response) (api, error) {
	t := reflect.TypeOf(r).Elem()
	a := api{key: key, typeName: t.Name(), maxV: r.MaxVersion()}
	a.paths = codePaths(t, nil, 0)
	for v := int16(0); v <= a.maxV; v++ {
		l := layout{version: v, present: make([]bool, len(a.paths)), topFixed: -1}
		enc1 := encode(key, v, a.paths, 1)
		dec := kmsg.ResponseForKey(key)
		dec.SetVersion(v)
		if err := dec.ReadFrom(enc1); err != nil {
			l.bad = true
			a.layouts = append(a.layouts, l)
			continue
		}
		dv := reflect.ValueOf(dec).Elem()
		for i, p := range a.paths {
			l.present[i] = holds(dv, p, int16(markerBase+i))
		}
		for i, p := range a.paths {
			if p.top() && p[0].field == "ErrorCode" && l.present[i] {
				enc2 := encode(key, v, a.paths, 2)
				o1, o2 := offsetOf(enc1, markerBase+i), offsetOf(enc2, markerBase+i)
				if o1 >= 0 && o1 == o2 {
					l.topFixed = o1
				}
			}
		}
		a.layouts = append(a.layouts, l)
	}
	return a, nil
}

// encode fills a response of this key (every code field with its marker,
// strings and item counts growing with size) and encodes it at version v.
func encode(key, v int16, paths []path, size int) []byte {
	r := kmsg.ResponseForKey(key)
	rv := reflect.ValueOf(r).Elem()
	fill(rv, size, 0)
	for i, p := range paths {
		set(rv, p, int16(markerBase+i))
	}
	r.SetVersion(v)
	return r.AppendTo(nil)
}

// fill gives every string a value, every slice size items and every
// pointer a target, so that nested code fields exist in the encoding.
func fill(v reflect.Value, size, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(kmsg.Tags{}) {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && v.Type().Field(i).Name != "Version" {
				fill(v.Field(i), size, depth+1)
			}
		}
	case reflect.String:
		v.SetString(strings.Repeat("x", size))
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		fill(e.Elem(), size, depth+1)
		v.Set(e)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(bytes.Repeat([]byte{'x'}, size))
			return
		}
		s := reflect.MakeSlice(v.Type(), size, size)
		for i := 0; i < size; i++ {
			fill(s.Index(i), size, depth+1)
		}
		v.Set(s)
	}
}

// set writes code into every field at p.
func set(v reflect.Value, p path, code int16) {
	walk(v, p, func(f reflect.Value) { f.SetInt(int64(code)) })
}

// holds reports whether some field at p holds code.
func holds(v reflect.Value, p path, code int16) bool {
	found := false
	walk(v, p, func(f reflect.Value) { found = found || f.Int() == int64(code) })
	return found
}

func walk(v reflect.Value, p path, fn func(reflect.Value)) {
	f := v.FieldByName(p[0].field)
	if len(p) == 1 {
		fn(f)
		return
	}
	switch {
	case p[0].slice:
		for i := 0; i < f.Len(); i++ {
			walk(f.Index(i), p[1:], fn)
		}
	case p[0].ptr:
		if !f.IsNil() {
			walk(f.Elem(), p[1:], fn)
		}
	default:
		walk(f, p[1:], fn)
	}
}

// offsetOf returns the one offset of the big-endian marker in b, or -1.
func offsetOf(b []byte, marker int) int {
	var m [2]byte
	binary.BigEndian.PutUint16(m[:], uint16(marker))
	i := bytes.Index(b, m[:])
	if i < 0 || bytes.Contains(b[i+1:], m[:]) {
		return -1
	}
	return i
}

// versionCond renders the versions in set (sorted) as a Go condition.
func versionCond(vs []int16, maxV int16) string {
	if len(vs) == int(maxV)+1 {
		return "true"
	}
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		switch {
		case vs[i] == vs[j]:
			parts = append(parts, fmt.Sprintf("version == %d", vs[i]))
		case vs[i] == 0:
			parts = append(parts, fmt.Sprintf("version <= %d", vs[j]))
		case vs[j] == maxV:
			parts = append(parts, fmt.Sprintf("version >= %d", vs[i]))
		default:
			parts = append(parts, fmt.Sprintf("(version >= %d && version <= %d)", vs[i], vs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, " || ")
}

// loop renders the visit of every field at p in r as nested range loops.
func loop(w *strings.Builder, p path, call string) {
	expr := "r"
	depth := 0
	closers := 0
	for i, s := range p {
		expr += "." + s.field
		if i == len(p)-1 {
			break
		}
		switch {
		case s.slice:
			v := fmt.Sprintf("x%d", depth)
			fmt.Fprintf(w, "for i%d := range %s {\n%s := &%s[i%d]\n", depth, expr, v, expr, depth)
			expr = v
			depth++
			closers++
		case s.ptr:
			fmt.Fprintf(w, "if %s != nil {\n", expr)
			closers++
		}
	}
	fmt.Fprintf(w, "%s(%s)\n", call, expr)
	w.WriteString(strings.Repeat("}\n", closers))
}

func render(apis []api) ([]byte, error) {
	var w strings.Builder
	w.WriteString(`// Code generated by internal/generrors from github.com/twmb/franz-go/pkg/kmsg. DO NOT EDIT.

package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// answerLayouts is indexed by API key: where each version's response keeps
// its top-level ErrorCode, and how many nested code fields it has. An empty
// entry is a key kmsg does not know.
var answerLayouts = [...]answerLayout{
`)
	for _, a := range apis {
		var tops, nested []string
		for _, l := range a.layouts {
			off := -2 // the version has no top-level code
			for i, p := range a.paths {
				if p.top() && p[0].field == "ErrorCode" && l.present[i] {
					off = l.topFixed // -1: present, not at a fixed offset
				}
			}
			if l.bad {
				off = -3
			}
			tops = append(tops, fmt.Sprint(off))
			n := 0
			for i, p := range a.paths {
				if l.present[i] && !(p.top() && p[0].field == "ErrorCode") {
					n++
				}
			}
			nested = append(nested, fmt.Sprint(n))
		}
		fmt.Fprintf(&w, "%d: {name: %q, maxVersion: %d, top: []int8{%s}, nested: []uint8{%s}},\n", a.key,
			strings.TrimSuffix(a.typeName, "Response"), a.maxV, strings.Join(tops, ", "), strings.Join(nested, ", "))
	}
	w.WriteString(`}

// readAnswer decodes a response body with kmsg and gives every error code
// the version holds to a: the top-level ErrorCode to a.top, every other one
// to a.nested.
func readAnswer(key, version int16, b []byte, a *answerCodes) error {
	switch key {
`)
	for _, a := range apis {
		if len(a.paths) == 0 {
			continue
		}
		fmt.Fprintf(&w, "case %d:\nr := kmsg.%s{Version: version}\nif err := r.UnsafeReadFrom(b); err != nil {\nreturn err\n}\n", a.key, a.typeName)
		for i, p := range a.paths {
			var vs []int16
			for _, l := range a.layouts {
				if !l.bad && l.present[i] {
					vs = append(vs, l.version)
				}
			}
			if len(vs) == 0 {
				continue
			}
			call := "a.nested"
			if p.top() && p[0].field == "ErrorCode" {
				call = "a.top"
			}
			cond := versionCond(vs, a.maxV)
			if cond != "true" {
				fmt.Fprintf(&w, "if %s {\n", cond)
			}
			loop(&w, p, call)
			if cond != "true" {
				w.WriteString("}\n")
			}
		}
	}
	w.WriteString("}\nreturn nil\n}\n")
	src, err := format.Source([]byte(w.String()))
	if err != nil {
		return nil, fmt.Errorf("format: %w\n%s", err, w.String())
	}
	return src, nil
}
