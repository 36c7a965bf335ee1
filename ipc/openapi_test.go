package ipc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var refs = regexp.MustCompile(`"\$ref": "#/components/schemas/([A-Za-z0-9]+)"`)

// TestOpenAPI: the document is OpenAPI 3.1 JSON with every route of the
// table, every $ref resolves, and every example decodes into its route's
// type, member for member.
func TestOpenAPI(t *testing.T) {
	b, err := OpenAPI("test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	seen := map[string]bool{}
	for _, r := range Routes {
		if seen[r.Pattern()] {
			t.Errorf("route %s twice in the table", r.Pattern())
		}
		seen[r.Pattern()] = true
		op := doc.Paths[r.Path][strings.ToLower(r.Method)]
		if op == nil {
			t.Errorf("%s is not in the document", r.Pattern())
			continue
		}
		if op["summary"] == "" || op["operationId"] == "" {
			t.Errorf("%s: no summary or operationId", r.Pattern())
		}
	}
	for _, m := range refs.FindAllSubmatch(b, -1) {
		if _, ok := doc.Components.Schemas[string(m[1])]; !ok {
			t.Errorf("$ref to %s, which is not in components", m[1])
		}
	}
	for _, r := range Routes {
		for _, ex := range []struct {
			what string
			v    any
			raw  json.RawMessage
		}{{"request", r.Request, r.RequestExample}, {"response", r.Response, r.ResponseExample}} {
			if ex.raw == nil {
				continue
			}
			if ex.v == nil {
				t.Errorf("%s: a %s example for no body", r.Pattern(), ex.what)
				continue
			}
			p := reflect.New(reflect.TypeOf(ex.v))
			dec := json.NewDecoder(bytes.NewReader(ex.raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(p.Interface()); err != nil {
				t.Errorf("%s: the %s example does not decode into %T: %v", r.Pattern(), ex.what, ex.v, err)
			}
		}
	}
}
