package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const sessionURIPrefix = "termgate://sessions/"

func (g *gateway) addResources(srv *mcp.Server) {
	for _, r := range []struct{ kind, title, mime, desc string }{
		{"transcript", "Session transcript", "text/plain", "The session's history as a human reads it (scrollback and screen), redacted."},
		{"screen", "Session screen", "text/plain", "The session's visible screen, redacted."},
		{"recording", "Session recording", "application/x-asciicast", "The session's asciicast recording, redacted, when recording is on."},
	} {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{
			Name:        "session-" + r.kind,
			Title:       r.title,
			Description: r.desc,
			MIMEType:    r.mime,
			URITemplate: sessionURIPrefix + "{id}/" + r.kind,
		}, g.readSessionResource)
	}
	srv.AddResource(&mcp.Resource{
		Name:        "policy",
		Title:       "Active policy",
		Description: "Which gateway stages are in force: policy engine and bundle revision, confirmation, redaction, audit.",
		MIMEType:    "application/json",
		URI:         "termgate://policy",
	}, g.readPolicyResource)
}

func (g *gateway) readSessionResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	g.testPanicPoint("resource " + uri)
	rest, ok := strings.CutPrefix(uri, sessionURIPrefix)
	id, kind, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	s, err := g.mgr.Get(id)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var text string
	switch kind {
	case "transcript":
		text = s.Scrollback(g.cfg.Scrollback + maxRows)
	case "screen":
		text, _, _ = s.Screen()
	case "recording":
		v, ok := g.recordings.Load(s.ID())
		if !ok {
			return nil, fmt.Errorf("session %s has no recording: start termgate with --record-dir to record sessions", s.ID())
		}
		tap := v.(*recordingTap)
		if err := tap.rec.Flush(); err != nil {
			return nil, fmt.Errorf("session %s: flushing its recording: %w", s.ID(), err)
		}
		b, err := os.ReadFile(tap.rec.Path())
		if err != nil {
			return nil, fmt.Errorf("session %s: reading its recording: %w", s.ID(), err)
		}
		// Written redacted already, as the program wrote it; served
		// redacted again event by event with the session's Taint, once
		// its history has been redacted whole (what only the screen put
		// together is held from then on; see recordingTap).
		s.Redact(s.Scrollback(g.cfg.Scrollback + maxRows))
		b, _ = redactCast(b, s.Redact)
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: uri, MIMEType: "application/x-asciicast", Text: string(b),
		}}}, nil
	default:
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: "text/plain", Text: g.redactIn(s, text),
	}}}, nil
}

func (g *gateway) readPolicyResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(map[string]any{
		"stages":  g.stages.describe(),
		"sandbox": "--sandbox=" + g.cfg.Sandbox,
		"limits": map[string]any{
			"max_sessions": g.cfg.MaxSessions, "idle_timeout": g.cfg.IdleTimeout.String(),
			"max_input": g.cfg.MaxInput, "max_output": g.cfg.MaxOutput, "scrollback": g.cfg.Scrollback,
		},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "application/json", Text: string(b),
	}}}, nil
}
