package main

import (
	"errors"
	"log"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// sctpPortPrefix is the environment variable prefix by which porter is told to serve SCTP.
const sctpPortPrefix = "SERVE_SCTP_PORT_"

// tolerateMissingSCTP wraps porter so that, on a kernel that refuses SCTP sockets (no sctp
// module), it drops its SERVE_SCTP_PORT_* variables before upstream porter starts. Upstream's
// SCTP server exits the process when it cannot listen, so the conformance pods never become
// Ready and every test fails at set-up. Invariants:
//   - only a refusal by the kernel (EPROTONOSUPPORT / ESOCKTNOSUPPORT) skips anything; any
//     other outcome, including SCTP working, leaves upstream behaviour untouched;
//   - a skipping porter stays alive like a serving one: a goroutine with a pending timer
//     keeps Go's deadlock detector from ending a process whose only ports were SCTP
//     (porter then waits in `select {}` with nothing else running).
//
// The skipped ports are logged; probes to them then fail in the suite with the client's own
// "protocol not supported", which run.sh counts apart from TCP/UDP failures.
func tolerateMissingSCTP(porter *cobra.Command, supported func() error) *cobra.Command {
	upstream := porter.Run
	porter.Run = func(cmd *cobra.Command, args []string) {
		if err := supported(); isKernelRefusal(err) {
			if skipped := dropSCTPPorts(); len(skipped) > 0 {
				log.Printf("porter: the kernel refuses SCTP sockets (%v): not serving %s", err, strings.Join(skipped, ", "))
				go keepAlive()
			}
		}
		upstream(cmd, args)
	}
	return porter
}

// sctpSupported opens and closes the kind of socket porter's SCTP server listens on.
func sctpSupported() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

// isKernelRefusal is true for the errors a kernel without SCTP gives for an SCTP socket.
func isKernelRefusal(err error) bool {
	return errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.ESOCKTNOSUPPORT)
}

// dropSCTPPorts unsets every SERVE_SCTP_PORT_* variable and returns their names.
func dropSCTPPorts() []string {
	var skipped []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, sctpPortPrefix) {
			os.Unsetenv(name)
			skipped = append(skipped, name)
		}
	}
	return skipped
}

// keepAlive never returns; its sleeping timer counts as pending work for the Go runtime.
func keepAlive() {
	for {
		time.Sleep(time.Hour)
	}
}
