//go:build !linux

package cmd

import (
	"context"
	"os/exec"
)

// implProc is an implementation started in a process group of its own
// (see ownGroup): outside Linux there is no child subreaper, so a process
// it starts in a session or group of its own (setsid) is not reached.
type implProc struct{ cmd *exec.Cmd }

func implCommand(ctx context.Context, argv []string) (*implProc, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	ownGroup(cmd)
	return &implProc{cmd: cmd}, nil
}

func (p *implProc) start(argv0 string) error {
	if err := p.cmd.Start(); err != nil {
		return startError(argv0, err)
	}
	return nil
}

// result: nothing is known of what the implementation left behind.
func (p *implProc) result(string) (int, error) { return 0, nil }

func (p *implProc) close() { killGroup(p.cmd) }
