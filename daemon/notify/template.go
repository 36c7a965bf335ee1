package notify

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/sessiond/sessiond/config"
)

// userAgent is sent with every webhook request.
const userAgent = "sessiond-notify/1"

// request is what a webhook template makes of a payload.
type request struct {
	body   []byte
	header http.Header
}

// render builds the webhook request for p in the given template (json,
// slack, ntfy; "" is json). urgent raises ntfy's priority.
func render(template string, p *Payload, isUrgent bool) (request, error) {
	h := http.Header{}
	h.Set("User-Agent", userAgent)
	h.Set("Sessiond-Event", p.Event)
	h.Set("Sessiond-Delivery", p.ID)
	switch template {
	case config.TemplateSlack:
		body, err := encodeJSON(map[string]string{"text": slackText(p)})
		h.Set("Content-Type", "application/json")
		return request{body, h}, err
	case config.TemplateNtfy:
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Title", headerValue(p.Title))
		h.Set("Priority", ntfyPriority(p, isUrgent))
		h.Set("Tags", headerValue(strings.Join(ntfyTags(p), ",")))
		if p.Link != "" {
			h.Set("Click", headerValue(p.Link))
		}
		body := p.Text
		if body == "" {
			body = p.Title
		}
		return request{[]byte(body), h}, nil
	default:
		body, err := encodeJSON(p)
		h.Set("Content-Type", "application/json")
		return request{body, h}, err
	}
}

// encodeJSON encodes v with a final newline, leaving <, > and & as they
// are (the payload is not HTML).
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// slackText is the payload as Slack mrkdwn: the title in bold, then the
// text. Slack wants &, < and > escaped in text.
func slackText(p *Payload) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	s := "*" + esc.Replace(p.Title) + "*"
	if p.Text != "" {
		s += "\n" + esc.Replace(p.Text)
	}
	if p.Link != "" {
		s += "\n<" + esc.Replace(p.Link) + "|Open the session>"
	}
	return s
}

// headerValue makes text fit for an HTTP header: control characters
// become spaces, and text beyond ASCII is RFC 2047-encoded, which ntfy
// decodes.
func headerValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	for _, r := range s {
		if r >= 0x80 {
			return mime.BEncoding.Encode("utf-8", s)
		}
	}
	return s
}

func ntfyPriority(p *Payload, isUrgent bool) string {
	switch {
	case isUrgent:
		return "high"
	case p.Event == config.NotifyStarted || p.Event == config.NotifyRestarted:
		return "low"
	}
	return "default"
}

// ntfyTags are an emoji (ntfy shows tags that are emoji short codes as
// emoji), "sessiond" and the event.
func ntfyTags(p *Payload) []string {
	emoji := "bell"
	switch p.Event {
	case config.NotifyEnded:
		switch p.EndReason {
		case "complete":
			emoji = "white_check_mark"
		case "interrupted":
			emoji = "stop_sign"
		case "idle":
			emoji = "zzz"
		default:
			emoji = "x"
		}
	case config.NotifyFailed, config.NotifyRestartLimit:
		emoji = "rotating_light"
	case config.NotifyWarned:
		emoji = "hourglass"
	case config.NotifyAgentWaiting:
		emoji = "raising_hand"
	case config.NotifyCheckpointFailed:
		emoji = "warning"
	case config.NotifyBudget:
		emoji = "moneybag"
	case config.NotifyAgentLimited:
		emoji = "no_entry"
	case config.NotifyAgentStalled:
		emoji = "turtle"
	case config.NotifyStarted, config.NotifyRestarted:
		emoji = "arrow_forward"
	case config.NotifyTest:
		emoji = "test_tube"
	}
	return []string{emoji, "sessiond", p.Event}
}
