package main

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
)

// runWrapped runs a stand-in porter wrapped by tolerateMissingSCTP and returns the SCTP and TCP
// variables the stand-in saw.
func runWrapped(t *testing.T, supported func() error) (sctp, tcp string) {
	t.Setenv("SERVE_SCTP_PORT_9003", "foo")
	t.Setenv("SERVE_TCP_PORT_80", "bar")
	stand := &cobra.Command{Use: "porter", Run: func(*cobra.Command, []string) {
		sctp = os.Getenv("SERVE_SCTP_PORT_9003")
		tcp = os.Getenv("SERVE_TCP_PORT_80")
	}}
	tolerateMissingSCTP(stand, supported).Run(stand, nil)
	return sctp, tcp
}

func TestKernelRefusalDropsOnlySCTPPorts(t *testing.T) {
	sctp, tcp := runWrapped(t, func() error { return syscall.EPROTONOSUPPORT })
	if sctp != "" || tcp != "bar" {
		t.Fatalf("after EPROTONOSUPPORT: SCTP %q (want unset), TCP %q (want bar)", sctp, tcp)
	}
}

func TestWorkingSCTPKeepsUpstreamBehaviour(t *testing.T) {
	sctp, tcp := runWrapped(t, func() error { return nil })
	if sctp != "foo" || tcp != "bar" {
		t.Fatalf("with SCTP working: SCTP %q TCP %q, want foo and bar", sctp, tcp)
	}
}

func TestOtherSocketErrorsKeepUpstreamBehaviour(t *testing.T) {
	for _, err := range []error{syscall.EACCES, syscall.EMFILE, errors.New("other")} {
		if sctp, _ := runWrapped(t, func() error { return err }); sctp != "foo" {
			t.Fatalf("after %v: SCTP port dropped (%q); only a kernel refusal may drop it", err, sctp)
		}
	}
}
