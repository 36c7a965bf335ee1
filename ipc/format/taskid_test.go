package format

import (
	"encoding/json"
	"testing"
)

func TestTaskIDJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    TaskID
		wantErr bool
	}{
		{`27`, IntTaskID(27), false},
		{`"auth-3"`, StringTaskID("auth-3"), false},
		{`"27"`, StringTaskID("27"), false},
		{`1.5e3`, TaskID{text: "1.5e3", number: true}, false},
		{`null`, TaskID{}, false},
		{`true`, TaskID{}, true},
		{`{}`, TaskID{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var got TaskID
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got != tt.want {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.in {
				t.Errorf("marshal: got %s, want %s", out, tt.in)
			}
		})
	}
}
