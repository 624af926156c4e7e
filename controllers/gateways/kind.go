package gateways

import (
	"context"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/registry"
)

// kind is what differs between a federated Gateway and a federated Ingress;
// everything else — placement, hostname claims, the DNSEndpoint, status
// conditions — the reconciler does alike for both.
type kind interface {
	// name is the Kind, as users read it.
	name() string
	newObject() client.Object
	// finalizer holds a federated object until its copies and records are
	// gone.
	finalizer() string
	// serves reads the hostnames obj serves and the ports it listens on,
	// reading what else they depend on (a Gateway's routes) from fed.
	serves(ctx context.Context, fed client.Reader, obj client.Object) (hosts []string, ports []int32, err error)
	// backends reads the names of the Services of obj's namespace it sends
	// traffic to (weights.go says which count).
	backends(ctx context.Context, fed client.Reader, obj client.Object) ([]string, error)
	// sync brings obj's copies in member m in line and reads their
	// addresses.
	sync(ctx context.Context, m registry.Member, obj client.Object, federation string) (memberCopy, error)
	// remove deletes the copies of key kfed made in m.
	remove(ctx context.Context, m registry.Member, key types.NamespacedName, federation string) error
	// setStatus writes the members' addresses (IPs, and names where a
	// member gave a name) and kfed's conditions into obj; it reports
	// whether the conditions live in the object's metadata (an Ingress has
	// no status conditions) rather than its status.
	setStatus(obj client.Object, addrs []netip.Addr, hostnames []string, conds []metav1.Condition) (inMetadata bool)
	// conditions reads kfed's conditions back from obj.
	conditions(obj client.Object) []metav1.Condition
}
