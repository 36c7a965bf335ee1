package server

import (
	"context"
	"errors"
	"testing"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

func (b *backend) NotifyStatus(ctx context.Context, c ipc.Caller, dir string) (*ipc.NotifyStatus, error) {
	return &ipc.NotifyStatus{ProjectDir: dir, Rules: []ipc.NotifyRuleInfo{{Number: 1, Origin: ipc.NotifyOriginDaemon,
		Label: "phone", Rule: config.NotifyRule{Name: "phone", On: []string{"ended"}, Desktop: true}}},
		Stats: ipc.NotifyStats{Dropped: 3}}, nil
}

func (b *backend) NotifyTest(ctx context.Context, c ipc.Caller, req ipc.NotifyTestRequest) (*ipc.NotifyTestResponse, error) {
	if req.Rule == "nope" {
		return nil, ipc.NotFound("no notification rule %q", req.Rule)
	}
	return &ipc.NotifyTestResponse{Results: []ipc.NotifyTestResult{{NotifyRuleInfo: ipc.NotifyRuleInfo{Number: 1, Label: req.Rule + "@" + req.Dir}, Error: "exit status 1"}}}, nil
}

func TestNotifyRoutes(t *testing.T) {
	c, _ := serve(t, &backend{}, nil)
	ctx := context.Background()
	st, err := c.NotifyStatus(ctx, "/p")
	if err != nil {
		t.Fatalf("NotifyStatus: %v", err)
	}
	if st.ProjectDir != "/p" || len(st.Rules) != 1 || st.Rules[0].Rule.Name != "phone" || st.Stats.Dropped != 3 {
		t.Errorf("NotifyStatus = %+v, want the project, rule phone and 3 dropped", st)
	}
	resp, err := c.NotifyTest(ctx, ipc.NotifyTestRequest{Rule: "2", Dir: "/p"})
	if err != nil {
		t.Fatalf("NotifyTest: %v", err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Label != "2@/p" || resp.Results[0].Error != "exit status 1" {
		t.Errorf("NotifyTest = %+v, want the request's rule and dir and the error", resp)
	}
	if _, err := c.NotifyTest(ctx, ipc.NotifyTestRequest{Rule: "nope"}); !errors.Is(err, ipc.ErrNotFound) {
		t.Errorf("NotifyTest of an unknown rule: err = %v, want ipc.ErrNotFound", err)
	}
}
