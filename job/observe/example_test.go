package observe_test

import (
	"fmt"

	"github.com/bmckit/bmckit/job/observe"
)

// Join combines a metrics and a tracing observer: each event reaches both,
// and a hook that neither sets stays nil (it costs the Runner nothing).
func ExampleJoin() {
	metrics := observe.Observer{TaskFinished: func(e observe.TaskEvent) {
		fmt.Println("metrics:", e.Kind, e.Result)
	}}
	traces := observe.Observer{TaskFinished: func(e observe.TaskEvent) {
		fmt.Println("traces:", e.Job, e.Index)
	}}
	o := observe.Join(metrics, traces)
	o.TaskFinished(observe.TaskEvent{Job: "netboot-1", Index: 0, Kind: "power", Result: "Succeeded"})
	fmt.Println(o.Queue == nil)
	// Output:
	// metrics: power Succeeded
	// traces: netboot-1 0
	// true
}
