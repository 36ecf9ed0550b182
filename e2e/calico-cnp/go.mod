// The oracle of the ClusterNetworkPolicy differential (README.md here): main.go calls Calico's own
// conversion at the commit in calico.commit. The module proxy refuses that commit's
// pseudo-versions, so build.sh exports the commit from a git clone into ./calico (beside a copy of
// this file, in the cache; never committed) and the replace directives below point there. The
// k8s.io replaces repeat Calico's own go.mod (a dependency's replace directives are ignored).
module tessera.dev/e2e/calico-cnp

go 1.26.5

require (
	github.com/projectcalico/api v0.0.0-20260303210141-543421943355
	github.com/projectcalico/calico v0.0.0-00010101000000-000000000000
	github.com/sirupsen/logrus v1.9.4
	sigs.k8s.io/network-policy-api v0.2.0
)

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-openapi/jsonpointer v0.22.4 // indirect
	github.com/go-openapi/jsonreference v0.21.4 // indirect
	github.com/go-openapi/swag v0.25.4 // indirect
	github.com/go-openapi/swag/cmdutils v0.25.4 // indirect
	github.com/go-openapi/swag/conv v0.25.4 // indirect
	github.com/go-openapi/swag/fileutils v0.25.4 // indirect
	github.com/go-openapi/swag/jsonname v0.25.4 // indirect
	github.com/go-openapi/swag/jsonutils v0.25.4 // indirect
	github.com/go-openapi/swag/loading v0.25.4 // indirect
	github.com/go-openapi/swag/mangling v0.25.4 // indirect
	github.com/go-openapi/swag/netutils v0.25.4 // indirect
	github.com/go-openapi/swag/stringutils v0.25.4 // indirect
	github.com/go-openapi/swag/typeutils v0.25.4 // indirect
	github.com/go-openapi/swag/yamlutils v0.25.4 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jinzhu/copier v0.4.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/projectcalico/calico/lib/std v0.0.0-00010101000000-000000000000 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/term v0.45.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.37.0-beta.0 // indirect
	k8s.io/apimachinery v0.37.0-beta.0 // indirect
	k8s.io/client-go v0.37.0-beta.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.31.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.4.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace (
	github.com/projectcalico/api => ./calico/api
	github.com/projectcalico/calico => ./calico
	github.com/projectcalico/calico/lib/datastructures => ./calico/lib/datastructures
	github.com/projectcalico/calico/lib/httpmachinery => ./calico/lib/httpmachinery
	github.com/projectcalico/calico/lib/logrusr => ./calico/lib/logrusr
	github.com/projectcalico/calico/lib/std => ./calico/lib/std

	// Need replacements for all the k8s subsidiary projects that are pulled in indirectly because
	// the kubernets repo pulls them in via a replacement to its own vendored copies, which doesn't work for
	// transient imports.
	k8s.io/api => k8s.io/api v0.37.0-beta.0
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.37.0-beta.0
	k8s.io/apimachinery => k8s.io/apimachinery v0.37.0-beta.0
	k8s.io/apiserver => k8s.io/apiserver v0.37.0-beta.0
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.37.0-beta.0
	k8s.io/client-go => k8s.io/client-go v0.37.0-beta.0
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.37.0-beta.0
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.37.0-beta.0
	k8s.io/code-generator => k8s.io/code-generator v0.37.0-beta.0
	k8s.io/component-base => k8s.io/component-base v0.37.0-beta.0
	k8s.io/component-helpers => k8s.io/component-helpers v0.37.0-beta.0
	k8s.io/controller-manager => k8s.io/controller-manager v0.37.0-beta.0
	k8s.io/cri-api => k8s.io/cri-api v0.37.0-beta.0
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.37.0-beta.0
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.37.0-beta.0
	k8s.io/endpointslice => k8s.io/endpointslice v0.37.0-beta.0
	k8s.io/externaljwt => k8s.io/externaljwt v0.37.0-beta.0
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.37.0-beta.0
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.37.0-beta.0
	// kubevirt.io/client-go requires a tagged kube-openapi version that doesn't
	// exist; pin to the pseudo-version used by the rest of our k8s dependencies.
	k8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-20260618221249-bc653b64f974
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.37.0-beta.0
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.37.0-beta.0
	k8s.io/kubectl => k8s.io/kubectl v0.37.0-beta.0
	k8s.io/kubelet => k8s.io/kubelet v0.37.0-beta.0
	k8s.io/metrics => k8s.io/metrics v0.37.0-beta.0
	k8s.io/mount-utils => k8s.io/mount-utils v0.37.0-beta.0
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.37.0-beta.0
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.37.0-beta.0
)
