package ipc

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// everyField is a StartRequest with every field set to a value that is
// not its zero, found by reflection: a field added to StartRequest and not
// to encodeStartRequest makes the encodings differ.
func everyField(t testing.TB) StartRequest {
	var r StartRequest
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString("v-" + name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int64, reflect.Int:
			f.SetInt(int64(7 + i))
		case reflect.Float64:
			f.SetFloat(2.5)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a-" + name, "b"}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]string{"Z": "1", "A": "2", "m<&>": "3"}))
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			if p.Elem().Kind() == reflect.String {
				p.Elem().SetString("p-" + name)
			}
			// A pointer to a zero bool or int is set, and sent.
			f.Set(p)
		default:
			t.Fatalf("StartRequest.%s: a %s, which the test (and encodeStartRequest) does not know", name, f.Kind())
		}
	}
	return r
}

func checkEncodesAsMarshal(t *testing.T, what string, r StartRequest) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, gerr := encodeStartRequest(nil, &r)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: encodeStartRequest error %v, json.Marshal error %v", what, gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: encodeStartRequest\n%s\njson.Marshal\n%s", what, got, want)
	}
}

func TestEncodeStartRequestIsMarshal(t *testing.T) {
	no, zero := false, 0
	none := ""
	cases := map[string]StartRequest{
		"zero":                    {},
		"usual":                   {Dir: "/home/me/src/app", Command: []string{"claude", "-p", "go on"}, Environ: []string{"HOME=/home/me", "PATH=/usr/bin:/bin"}, Timeout: "2h"},
		"every":                   everyField(t),
		"escape":                  {Dir: "/tmp/<a&b>\"\\\n\t\x01", Name: "é\u2028\u2029", Command: []string{"\xff\xfe", "ok"}, Env: map[string]string{"K\"": "v\x00", "": ""}},
		"empty, not nil":          {Command: []string{}, Environ: []string{}, Env: map[string]string{}},
		"pointers to zero values": {Checkpoint: &none, TTY: &no, InheritEnv: &no, Queue: &no, Priority: &zero},
		"negative":                {MaxTokens: -1, PidsMax: math.MinInt64, CPUWeight: math.MaxInt64, MaxCostUSD: -0.5},
	}
	for _, f := range []float64{0.1, 1e-7, 1e-6, 1e20, 1e21, 123.456, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		cases["cost "+strings.TrimSpace(string(mustJSON(f)))] = StartRequest{MaxCostUSD: f}
	}
	for what, r := range cases {
		checkEncodesAsMarshal(t, what, r)
	}
	// Every key of the struct is in the encoding of everyField.
	got, _ := encodeStartRequest(nil, &StartRequest{})
	full, _ := encodeStartRequest(nil, func() *StartRequest { r := everyField(t); return &r }())
	typ := reflect.TypeOf(StartRequest{})
	for i := 0; i < typ.NumField(); i++ {
		key := `"` + strings.Split(typ.Field(i).Tag.Get("json"), ",")[0] + `":`
		if !bytes.Contains(full, []byte(key)) {
			t.Errorf("the encoding of every field has no %s: %s", key, full)
		}
	}
	if string(got) != `{"dir":""}` {
		t.Errorf("the zero request encodes as %s", got)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestEncodeStartRequestRefusesWhatMarshalRefuses(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := StartRequest{Dir: "/p", MaxCostUSD: f}
		if _, err := encodeStartRequest(nil, &r); err == nil {
			t.Errorf("max_cost_usd %v: encoded, json.Marshal refuses it", f)
		}
		if _, err := startBody(&r); err == nil {
			t.Errorf("max_cost_usd %v: a body was made", f)
		}
	}
}

func TestEncodeStartRequestsIsMarshal(t *testing.T) {
	for what, rs := range map[string][]StartRequest{
		"nil":   nil,
		"empty": {},
		"one":   {{Dir: "/a"}},
		"many":  {{Dir: "/a", Command: []string{"x"}}, everyField(t), {Dir: "/c", EnvironOfFirst: true}},
	} {
		want := mustJSON(rs)
		got, err := encodeStartRequests(nil, rs)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: encodeStartRequests %s, %v; json.Marshal %s", what, got, err, want)
		}
	}
}

// The daemon reads what the client sends as the request it was.
func TestEncodedStartRequestReadsBack(t *testing.T) {
	want := everyField(t)
	body, err := startBody(&want)
	if err != nil {
		t.Fatal(err)
	}
	var got StartRequest
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
}

func FuzzEncodeStartRequest(f *testing.F) {
	f.Add("/home/me/app", "claude", "HOME=/h", "name", "K", "V", 1.5, int64(3), true)
	f.Add("<&>", "\u2028", "\xff", "", "", "", 0.0, int64(0), false)
	f.Add("\"\\", "\x00\x1f", "é", "x", "\x7f", "🚀", 1e21, int64(-9), true)
	f.Fuzz(func(t *testing.T, dir, arg, env, name, k, v string, cost float64, n int64, b bool) {
		r := StartRequest{Dir: dir, Command: []string{arg, dir}, Environ: []string{env}, Name: name, Env: map[string]string{k: v, v: k},
			MaxCostUSD: cost, MaxTokens: n, Worktree: b, TTY: &b, Pool: k, StallTimeout: v}
		want, werr := json.Marshal(r)
		got, gerr := encodeStartRequest(nil, &r)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("encodeStartRequest %q, %v; json.Marshal %q, %v", got, gerr, want, werr)
		}
	})
}
