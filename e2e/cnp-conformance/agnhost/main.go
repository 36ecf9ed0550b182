// Command agnhost is the subset of Kubernetes' e2e test image agnhost
// (k8s.io/kubernetes/test/images/agnhost) that the ClusterNetworkPolicy conformance suite's pods
// run: connect (the probe client), netexec and serve-hostname (TCP/UDP servers), porter (the
// SCTP servers) and pause (the image's default command). Every subcommand is upstream's own
// cobra command; the one change is porter's SCTP tolerance (sctp_tolerance.go), so the suite's
// pods become Ready on kernels without SCTP and their SCTP probes fail visibly instead.
// Test tooling only (e2e/cnp-conformance/build.sh builds it statically for the agnhost image).
package main

import (
	"os"

	"github.com/spf13/cobra"

	"k8s.io/kubernetes/test/images/agnhost/connect"
	"k8s.io/kubernetes/test/images/agnhost/netexec"
	"k8s.io/kubernetes/test/images/agnhost/pause"
	"k8s.io/kubernetes/test/images/agnhost/porter"
	servehostname "k8s.io/kubernetes/test/images/agnhost/serve-hostname"
)

func main() {
	root := &cobra.Command{Use: "agnhost", SilenceUsage: true}
	root.AddCommand(connect.CmdConnect, netexec.CmdNetexec, pause.CmdPause, servehostname.CmdServeHostname)
	root.AddCommand(tolerateMissingSCTP(porter.CmdPorter, sctpSupported))
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
