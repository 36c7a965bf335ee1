package ipc

import (
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// OpenAPI is the API as an OpenAPI 3.1 document, made from Routes and the
// wire types they name: each Go type a schema of components/schemas (its
// JSON members from its json tags; a member without omitempty required),
// each route an operation.
func OpenAPI(version string) ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	paths := map[string]map[string]any{}
	for _, r := range Routes {
		op := map[string]any{"summary": r.Summary, "operationId": operationID(r)}
		var params []any
		for _, name := range pathParams().FindAllStringSubmatch(r.Path, -1) {
			params = append(params, map[string]any{"name": name[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range r.Query {
			s := map[string]any{"type": "string"}
			if q.Flag {
				s = map[string]any{"type": "string", "enum": []string{"1"}}
			}
			params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": s})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.Request != nil {
			schema := g.schema(reflect.TypeOf(r.Request))
			if r.Batch != nil {
				schema = map[string]any{"oneOf": []any{schema, g.schema(reflect.TypeOf(r.Batch))}}
			}
			media := map[string]any{"schema": schema}
			if r.RequestExample != nil {
				media["example"] = r.RequestExample
			}
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": media}}
		}
		resp := map[string]any{"description": statusText[r.Status]}
		switch {
		case r.Stream == TermUpgrade:
			resp["description"] = "Switching Protocols: the terminal stream (Upgrade: " + TermUpgrade + ")"
		case r.Stream != "":
			media := map[string]any{}
			if r.Response != nil {
				media["schema"] = g.schema(reflect.TypeOf(r.Response))
			} else {
				media["schema"] = map[string]any{"type": "string"}
			}
			resp["content"] = map[string]any{r.Stream: media}
		case r.Response != nil:
			media := map[string]any{"schema": g.schema(reflect.TypeOf(r.Response))}
			if r.ResponseExample != nil {
				media["example"] = r.ResponseExample
			}
			resp["content"] = map[string]any{"application/json": media}
		}
		op["responses"] = map[string]any{
			itoa(r.Status): resp,
			"default":      map[string]any{"description": "an error", "content": map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(ErrorBody{}))}}},
		}
		if paths[r.Path] == nil {
			paths[r.Path] = map[string]any{}
		}
		paths[r.Path][strings.ToLower(r.Method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "sessiond", "version": version,
			"description": "The API of sessiond, on its Unix socket (and through SSH: sessionctl --host). Errors are {\"error\", \"code\"} with a fitting status."},
		"paths":      paths,
		"components": map[string]any{"schemas": g.defs},
	}
	return json.MarshalIndent(doc, "", "  ")
}

var pathParams = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([a-z_]+)\}`) })

// operationID is a route's operationId: its method and path, as words.
func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, part := range strings.Split(strings.TrimPrefix(r.Path, "/v1/"), "/") {
		part = strings.Trim(part, "{}")
		for _, w := range strings.FieldsFunc(part, func(r rune) bool { return r == '.' || r == '_' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// statusText names the success statuses of the routes.
var statusText = map[int]string{statusSwitching: "Switching Protocols", statusOK: "OK", statusCreated: "Created", statusNoContent: "No Content"}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// schemaGen makes JSON schemas of Go types, each named struct once, in
// defs.
type schemaGen struct {
	defs map[string]any
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	rawType       = reflect.TypeOf(json.RawMessage(nil))
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
)

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	case t.Kind() != reflect.Pointer && (t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)):
		// Durations, sizes, signals: written as text.
		return map[string]any{"type": "string"}
	case t.Kind() != reflect.Pointer && (t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)):
		// A value of its own making (a bool or a name): any JSON.
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.schema(t.Elem())
		return map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": []string{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := t.Name()
		if name == "" {
			return g.object(t)
		}
		if t.PkgPath() != "" && !strings.HasSuffix(t.PkgPath(), "/ipc") {
			name = pkgName(t.PkgPath()) + name
		}
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{} // a type that holds itself
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func pkgName(path string) string {
	p := path[strings.LastIndex(path, "/")+1:]
	return strings.ToUpper(p[:1]) + p[1:]
}

// object is a struct's schema: its JSON members, embedded structs' lifted.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if name == "" {
				name = f.Name
			}
			props[name] = g.schema(f.Type)
			if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
				required = append(required, name)
			}
		}
	}
	walk(t)
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		s["required"] = required
	}
	return s
}
