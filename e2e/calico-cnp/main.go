// Command calico-cnp is the oracle of the ClusterNetworkPolicy differential
// (e2e/calico-cnp/README.md): Calico's own conversion of a ClusterNetworkPolicy into a
// projectcalico.org/v3 GlobalNetworkPolicy, libcalico-go's
// conversion.Converter.K8sClusterNetworkPolicyToCalico, run on each JSON line of stdin.
//
// Each input line is one ClusterNetworkPolicy (policy.networking.k8s.io, any served version:
// Calico decodes v1alpha2, whose schema v1beta1 repeats). Each output line is one JSON object:
//
//	{"policy": <GlobalNetworkPolicy spec, or null when Calico drops the object>, "error": "<conversion error>"}
//
// "error" is absent when Calico reports none; Calico returns a policy and an error together when
// it replaced rules it could not convert. A line that does not decode yields {"decodeError": ...}.
// Nothing else is printed to stdout; Calico's logging goes to stderr at error level.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	apiv3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	"github.com/sirupsen/logrus"
	clusternetpol "sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/projectcalico/calico/libcalico-go/lib/backend/k8s/conversion"
)

type result struct {
	Policy      *apiv3.GlobalNetworkPolicySpec `json:"policy"`
	Error       string                         `json:"error,omitempty"`
	DecodeError string                         `json:"decodeError,omitempty"`
}

func main() {
	logrus.SetOutput(os.Stderr)
	logrus.SetLevel(logrus.ErrorLevel)
	c := conversion.NewConverter()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		line := in.Bytes()
		if len(line) == 0 {
			continue
		}
		var r result
		var cnp clusternetpol.ClusterNetworkPolicy
		if err := json.Unmarshal(line, &cnp); err != nil {
			r.DecodeError = err.Error()
		} else {
			kvp, err := c.K8sClusterNetworkPolicyToCalico(&cnp)
			if err != nil {
				r.Error = err.Error()
			}
			if kvp != nil && kvp.Value != nil {
				gnp, ok := kvp.Value.(*apiv3.GlobalNetworkPolicy)
				if !ok {
					fmt.Fprintf(os.Stderr, "calico-cnp: unexpected value type %T\n", kvp.Value)
					os.Exit(2)
				}
				r.Policy = &gnp.Spec
			}
		}
		if err := enc.Encode(&r); err != nil {
			fmt.Fprintln(os.Stderr, "calico-cnp:", err)
			os.Exit(2)
		}
		// One answer per line, flushed: the caller may stream.
		if err := out.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "calico-cnp:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "calico-cnp:", err)
		os.Exit(2)
	}
}
