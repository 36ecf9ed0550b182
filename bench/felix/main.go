// Command felix-calc-bench runs Felix's calculation graph — Calico's own Go code, imported as a
// module at the release pinned in go.mod — on a workload written by bench/calc-workload.ts, and
// prints the JSON figures bench/calc-vs-felix-tessera.ts prints for Tessera on the same files.
// bench/scenarios/calc-vs-felix.ts runs both, interleaved, and prints the ratios.
//
// What is timed, as Felix runs it (felix/calc/async_calc_graph.go, without its goroutine hop):
// the ValidationFilter in front of the CalcGraph, updates in syncer-sized batches, then the
// status InSync and one CalcGraph.Flush + EventSequencer.Flush whose messages are the output.
// With -convert the v3→v1 update processors that Felix's syncer runs on every object
// (libcalico-go/lib/backend/syncersv1/updateprocessors) are inside the timed section too —
// the like-for-like comparison, since Tessera's graph takes v3 objects; without it they run
// beforehand. Parsing the JSON is never timed, on either side.
//
// Output is folded into a canonical state (IP sets and members, active policies and profiles,
// local endpoints with their tiers and profiles) whose sha256 both sides print: equal digests
// mean the two graphs produced the same dataplane state.
//
// Heap: runtime.GC() twice, then MemStats.HeapAlloc, with the graph alive and the input dropped
// (the counterpart of V8's heapUsed after gc()).
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	apiv3 "github.com/projectcalico/api/pkg/apis/projectcalico/v3"
	"github.com/sirupsen/logrus"

	"github.com/projectcalico/calico/felix/calc"
	"github.com/projectcalico/calico/felix/config"
	"github.com/projectcalico/calico/felix/proto"
	libapiv3 "github.com/projectcalico/calico/libcalico-go/lib/apis/v3"
	"github.com/projectcalico/calico/libcalico-go/lib/backend/api"
	"github.com/projectcalico/calico/libcalico-go/lib/backend/model"
	"github.com/projectcalico/calico/libcalico-go/lib/backend/syncersv1/updateprocessors"
	"github.com/projectcalico/calico/libcalico-go/lib/backend/watchersyncer"
)

const batchSize = 1000

func main() {
	dir := flag.String("workload", "", "workload directory (sync.ndjson, churn-<name>-{0,1}.ndjson)")
	node := flag.String("node", "node-0", "this node's name")
	convert := flag.Bool("convert", false, "time the v3→v1 update processors too")
	repeats := map[string]*int{
		"remote": flag.Int("churn-repeat", 100, "times the remote churn's two rounds are applied"),
		"mixed":  flag.Int("mixed-repeat", 10, "times the mixed churn's two rounds are applied"),
	}
	flushEvery := flag.Int("flush-every", 100, "churn updates per flush")
	dump := flag.String("dump", "", "write the canonical states to <dump>.<phase>.txt")
	flag.Parse()
	if *dir == "" {
		fail("-workload is required")
	}
	logrus.SetLevel(logrus.ErrorLevel)
	caseName := filepath.Base(*dir)
	mode := "graph"
	if *convert {
		mode = "graph+conversion"
	}
	baseline := heapMB()

	conf := config.New()
	conf.FelixHostname = *node
	b := newBench(conf)

	syncKVs := readResources(filepath.Join(*dir, "sync.ndjson"))
	var pre []api.Update
	if !*convert {
		pre = processAll(syncKVs)
		syncKVs = nil
	}
	runtime.GC()

	start := time.Now()
	b.validator.OnStatusUpdated(api.ResyncInProgress)
	batch := []api.Update{{KVPair: model.KVPair{Key: model.ReadyFlagKey{}, Value: true}, UpdateType: api.UpdateTypeKVNew}}
	send := func(u api.Update) {
		batch = append(batch, u)
		if len(batch) == batchSize {
			b.validator.OnUpdates(batch)
			batch = make([]api.Update, 0, batchSize)
		}
	}
	if *convert {
		for i := range syncKVs {
			for _, u := range process(&syncKVs[i]) {
				send(u)
			}
		}
	} else {
		for _, u := range pre {
			send(u)
		}
	}
	b.validator.OnUpdates(batch)
	b.validator.OnStatusUpdated(api.InSync)
	b.flush()
	seconds := time.Since(start).Seconds()
	syncKVs, pre, batch = nil, nil, nil

	messages := len(b.out)
	ipSets, policies := 0, 0
	for _, m := range b.out {
		switch m.(type) {
		case *proto.IPSetUpdate:
			ipSets++
		case *proto.ActivePolicyUpdate:
			policies++
		}
	}
	st := newState()
	st.apply(b.out)
	b.out = nil
	digest, lines := st.digest()
	writeDump(*dump, "sync", lines)
	lines = nil
	heap := heapMB()
	report(map[string]any{
		"bench": "calc-vs-felix", "impl": "felix", "mode": mode, "case": caseName, "phase": "sync",
		"seconds": round(seconds, 3), "messages": messages, "ipSets": ipSets, "policies": policies,
		"stateDigest": digest, "state": st.counts(),
		"heapMB": heap, "baselineHeapMB": baseline, "rssMB": rssMB(),
	})

	for _, churn := range []string{"remote", "mixed"} {
		rounds := [2][]model.KVPair{}
		var preRounds [2][]api.Update
		found := true
		for r := 0; r < 2; r++ {
			path := filepath.Join(*dir, fmt.Sprintf("churn-%s-%d.ndjson", churn, r))
			if _, err := os.Stat(path); err != nil {
				found = false
				break
			}
			rounds[r] = readResources(path)
			if !*convert {
				preRounds[r] = processAll(rounds[r])
			}
		}
		if !found {
			continue
		}
		updates := 0
		start := time.Now()
		for rep := 0; rep < *repeats[churn]; rep++ {
			for r := 0; r < 2; r++ {
				n := len(rounds[r])
				for i := 0; i < n; i++ {
					if *convert {
						b.validator.OnUpdates(process(&rounds[r][i]))
					} else {
						b.validator.OnUpdates(preRounds[r][i : i+1])
					}
					updates++
					if updates%*flushEvery == 0 {
						b.flush()
					}
				}
			}
		}
		b.flush()
		seconds := time.Since(start).Seconds()
		memberChanges := 0
		for _, m := range b.out {
			if d, ok := m.(*proto.IPSetDeltaUpdate); ok {
				memberChanges += len(d.AddedMembers) + len(d.RemovedMembers)
			}
		}
		msgs := len(b.out)
		st.apply(b.out)
		b.out = nil
		digest, lines := st.digest()
		writeDump(*dump, "churn-"+churn, lines)
		report(map[string]any{
			"bench": "calc-vs-felix", "impl": "felix", "mode": mode, "case": caseName, "phase": "churn-" + churn,
			"updatesPerSecond": int(float64(updates) / seconds), "updates": updates, "seconds": round(seconds, 3),
			"messages": msgs, "ipSetMemberChanges": memberChanges, "stateDigest": digest, "state": st.counts(),
			"heapMB": heapMB(), "rssMB": rssMB(),
		})
	}
}

// bench is the pipeline Felix builds (felix/daemon: syncer → ValidationFilter → CalcGraph →
// EventSequencer), run synchronously.
type bench struct {
	graph     *calc.CalcGraph
	sequencer *calc.EventSequencer
	validator *calc.ValidationFilter
	out       []interface{}
}

func newBench(conf *config.Config) *bench {
	b := &bench{}
	b.sequencer = calc.NewEventSequencer(conf)
	b.sequencer.Callback = func(m interface{}) { b.out = append(b.out, m) }
	b.graph = calc.NewCalculationGraph(b.sequencer, conf, func() {})
	b.validator = calc.NewValidationFilter(b.graph, conf)
	return b
}

func (b *bench) flush() {
	b.graph.Flush()
	b.sequencer.Flush()
}

var processors = map[string]watchersyncer.SyncerUpdateProcessor{
	apiv3.KindProfile:             updateprocessors.NewProfileUpdateProcessor(),
	apiv3.KindNetworkPolicy:       updateprocessors.NewNetworkPolicyUpdateProcessor(),
	apiv3.KindGlobalNetworkPolicy: updateprocessors.NewGlobalNetworkPolicyUpdateProcessor(),
	libapiv3.KindWorkloadEndpoint: updateprocessors.NewWorkloadEndpointUpdateProcessor(),
}

// process runs Felix's update processor for the object's kind: one v3 object → v1 updates.
func process(kv *model.KVPair) []api.Update {
	key := kv.Key.(model.ResourceKey)
	v1, err := processors[key.Kind].Process(kv)
	if err != nil {
		fail(fmt.Sprintf("%s %s/%s: update processor: %v", key.Kind, key.Namespace, key.Name, err))
	}
	out := make([]api.Update, 0, len(v1))
	for _, p := range v1 {
		out = append(out, api.Update{KVPair: *p, UpdateType: api.UpdateTypeKVNew})
	}
	return out
}

func processAll(kvs []model.KVPair) []api.Update {
	var out []api.Update
	for i := range kvs {
		out = append(out, process(&kvs[i])...)
	}
	return out
}

// readResources parses one v3 object per line into the KVPairs Felix's watcher syncer hands its
// update processors.
func readResources(path string) []model.KVPair {
	f, err := os.Open(path)
	if err != nil {
		fail(err.Error())
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []model.KVPair
	var head struct {
		Kind string `json:"kind"`
	}
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		if err := json.Unmarshal(raw, &head); err != nil {
			fail(fmt.Sprintf("%s:%d: %v", path, line, err))
		}
		var obj interface {
			GetName() string
			GetNamespace() string
		}
		switch head.Kind {
		case apiv3.KindProfile:
			obj = &apiv3.Profile{}
		case apiv3.KindNetworkPolicy:
			obj = &apiv3.NetworkPolicy{}
		case apiv3.KindGlobalNetworkPolicy:
			obj = &apiv3.GlobalNetworkPolicy{}
		case libapiv3.KindWorkloadEndpoint:
			obj = &libapiv3.WorkloadEndpoint{}
		default:
			fail(fmt.Sprintf("%s:%d: kind %q is not in this bench", path, line, head.Kind))
		}
		if err := json.Unmarshal(raw, obj); err != nil {
			fail(fmt.Sprintf("%s:%d: %v", path, line, err))
		}
		out = append(out, model.KVPair{
			Key:   model.ResourceKey{Kind: head.Kind, Name: obj.GetName(), Namespace: obj.GetNamespace()},
			Value: obj,
		})
	}
	if err := sc.Err(); err != nil {
		fail(fmt.Sprintf("%s: %v", path, err))
	}
	return out
}

// state is the dataplane state the messages describe, in the canonical form both benches print.
type state struct {
	ipSets    map[string]map[string]struct{}
	ipSetType map[string]string
	policies  map[string]struct{}
	profiles  map[string]struct{}
	endpoints map[string]string
}

func newState() *state {
	return &state{
		ipSets: map[string]map[string]struct{}{}, ipSetType: map[string]string{},
		policies: map[string]struct{}{}, profiles: map[string]struct{}{}, endpoints: map[string]string{},
	}
}

var ipSetTypes = map[proto.IPSetUpdate_IPSetType]string{
	proto.IPSetUpdate_IP: "ip", proto.IPSetUpdate_IP_AND_PORT: "ip,port", proto.IPSetUpdate_NET: "net",
}

func (s *state) apply(msgs []interface{}) {
	for _, m := range msgs {
		switch m := m.(type) {
		case *proto.IPSetUpdate:
			set := map[string]struct{}{}
			for _, member := range m.Members {
				set[member] = struct{}{}
			}
			s.ipSets[m.Id] = set
			s.ipSetType[m.Id] = ipSetTypes[m.Type]
		case *proto.IPSetDeltaUpdate:
			set := s.ipSets[m.Id]
			if set == nil {
				fail("IPSetDeltaUpdate for unknown set " + m.Id)
			}
			for _, member := range m.RemovedMembers {
				delete(set, member)
			}
			for _, member := range m.AddedMembers {
				set[member] = struct{}{}
			}
		case *proto.IPSetRemove:
			delete(s.ipSets, m.Id)
			delete(s.ipSetType, m.Id)
		case *proto.ActivePolicyUpdate:
			s.policies[m.Id.Tier+"/"+m.Id.Name] = struct{}{}
		case *proto.ActivePolicyRemove:
			delete(s.policies, m.Id.Tier+"/"+m.Id.Name)
		case *proto.ActiveProfileUpdate:
			s.profiles[m.Id.Name] = struct{}{}
		case *proto.ActiveProfileRemove:
			delete(s.profiles, m.Id.Name)
		case *proto.WorkloadEndpointUpdate:
			var tiers []string
			for _, t := range m.Endpoint.Tiers {
				tiers = append(tiers, t.Name+":in="+strings.Join(t.IngressPolicies, ",")+":eg="+strings.Join(t.EgressPolicies, ","))
			}
			s.endpoints[m.Id.WorkloadId+" "+m.Id.EndpointId] = "tiers=" + strings.Join(tiers, ";") + " profiles=" + strings.Join(m.Endpoint.ProfileIds, ",")
		case *proto.WorkloadEndpointRemove:
			delete(s.endpoints, m.Id.WorkloadId+" "+m.Id.EndpointId)
		}
	}
}

// digest: sha256 of the sorted canonical lines (the same lines the Tessera side writes).
func (s *state) digest() (string, []string) {
	var lines []string
	for id, set := range s.ipSets {
		members := make([]string, 0, len(set))
		for m := range set {
			members = append(members, m)
		}
		sort.Strings(members)
		lines = append(lines, "ipset "+id+" "+s.ipSetType[id]+" "+strings.Join(members, ","))
	}
	for p := range s.policies {
		lines = append(lines, "policy "+p)
	}
	for p := range s.profiles {
		lines = append(lines, "profile "+p)
	}
	for id, ep := range s.endpoints {
		lines = append(lines, "endpoint "+id+" "+ep)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8]), lines
}

func (s *state) counts() map[string]int {
	members := 0
	for _, set := range s.ipSets {
		members += len(set)
	}
	return map[string]int{"ipSets": len(s.ipSets), "members": members, "policies": len(s.policies), "profiles": len(s.profiles), "endpoints": len(s.endpoints)}
}

func writeDump(prefix, phase string, lines []string) {
	if prefix == "" {
		return
	}
	if err := os.WriteFile(prefix+"."+phase+".txt", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		fail(err.Error())
	}
}

func heapMB() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return round(float64(ms.HeapAlloc)/1048576, 1)
}

// rssMB: VmRSS of this process from /proc/self/status.
func rssMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return round(float64(kb)/1024, 1)
		}
	}
	return -1
}

func round(v float64, places int) float64 {
	p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', places, 64), 64)
	return p
}

func report(fields map[string]any) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "felix-calc-bench: "+msg)
	os.Exit(1)
}
