package secretcreds_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
)

// A credentials reference "namespace/name" names a Secret with the keys
// username and password. (A fake client here; a controller passes its
// manager's client.)
func ExampleResolver() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rack1", Name: "bmc-secret"},
		Data:       map[string][]byte{"username": []byte("admin"), "password": []byte("s3cret")},
	}).Build()
	r := secretcreds.Resolver{Reader: c}
	creds, err := r.Resolve(context.Background(), "rack1/bmc-secret")
	fmt.Println(creds.Username, err)
	_, err = r.Resolve(context.Background(), "rack1/missing")
	fmt.Println(err != nil)
	// Output:
	// admin <nil>
	// true
}
