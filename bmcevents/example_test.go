package bmcevents_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/storage/memstore"
)

// A BMC pushes an event to its destination; the receiver stores it
// before answering, drops the BMC's retry of the same push, and the host
// reads the event through a Follower.
func ExampleReceiver() {
	ctx := context.Background()
	store := memstore.New()
	secret := []byte("a-secret-of-at-least-16-bytes")
	rcv, _ := bmcevents.NewReceiver(bmcevents.Config{Store: store, Secret: secret})

	// The URL the Manager gives the BMC (it carries the BMC's token).
	dest, _ := bmcevents.Destination("https://10.0.0.2:8443/bmc-events", secret, "rack1-node7")
	u, _ := url.Parse(dest)

	body := `{"Events":[{"EventId":"41","EventType":"Alert","MessageSeverity":"Critical",
	  "Message":"Power supply 2 lost input.","MessageId":"OpenBMC.0.1.PowerSupplyACLost",
	  "OriginOfCondition":{"@odata.id":"/redfish/v1/Systems/1"}}]}`
	for range 2 { // the second is a BMC's retry
		w := httptest.NewRecorder()
		rcv.ServeHTTP(w, httptest.NewRequest("POST", u.Path, strings.NewReader(body)))
		fmt.Print(w.Code, " ", w.Body.String())
	}

	evs, _, _ := bmcevents.NewFollower(store).Next(ctx)
	for _, e := range evs {
		fmt.Println(e.Source, e.System, e.Severity, e.Critical(), e.Message)
	}
	// Output:
	// 200 {"stored":1,"duplicates":0}
	// 200 {"stored":0,"duplicates":1}
	// rack1-node7 1 Critical true Power supply 2 lost input.
}
