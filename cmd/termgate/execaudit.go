package main

import (
	"fmt"

	"github.com/termgate/termgate/audit"
)

// execRecord fills the record of one exec the gate judged: an ECS process
// start event (event.action process-exec; event.category process and
// intrusion_detection; event.type start and allowed or denied) with the
// program as the kernel was asked to run it: process.executable (the
// resolved file), process.name (what it is), process.args and
// process.command_line (redacted), process.pid (the process that asked),
// process.parent.pid, process.working_directory; the session, the call
// that caused it (gen_ai.tool.call.id: the call in flight, else the
// session's last), the decision and its rule; the programs above it in
// termgate.exec.parents. A refused exec (or one --exec-gate=audit let
// through) is a security event, fsync'd, and carries the policy input
// for replay. text is the command line, redacted.
func (a *ecsAuditor) execRecord(r audit.Record, ev AuditEvent, text string, setRule func(Decision)) (bool, string) {
	in, d := ev.Input, ev.Decision
	unenforced := ev.Fields["termgate.exec.enforced"] == false
	ran := d.Action == "allow" || unenforced
	typ, outcome := "allowed", "success"
	if !ran {
		typ, outcome = "denied", "failure"
	}
	r.Set("event.category", []string{"process", "intrusion_detection"}).Set("event.type", []string{"start", typ}).
		Set("event.action", "process-exec").Set("event.outcome", outcome)
	setRule(d)
	if x := in.Exec; x != nil {
		args := make([]string, len(x.Argv))
		for i, s := range x.Argv {
			args[i] = a.red.Redact(s)
		}
		r.Set("process.args", args).Set("process.args_count", len(args)).Set("process.command_line", text).
			Set("process.executable", a.red.Redact(x.Path)).Set("process.working_directory", a.red.Redact(x.Cwd))
		if x.LineConfirmed {
			r.Set("termgate.exec.line_confirmed", true)
		}
	}
	security := d.Action != "allow"
	if security {
		a.setPolicyInput(r, in, d)
	}
	what := map[bool]string{true: "allowed", false: "refused"}[ran]
	if unenforced {
		what = "would refuse (audit mode)"
	}
	return security, fmt.Sprintf("exec %s: %s by %s", what, in.Program, d.Rule)
}

// orOff is a mode for a record: "off" when unset.
func orOff(mode string) string {
	if mode == "" {
		return "off"
	}
	return mode
}
