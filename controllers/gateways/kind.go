package gateways

import (
	"context"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
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

// memberCopy is what one member's copy gave this reconcile.
type memberCopy struct {
	// outcome is how syncing it went: publish.Serving, Waiting (no address
	// yet), WriteFailed, LeftAlone (an object kfed did not make for this
	// origin holds the name), Unresolved (a hostname address that did not
	// resolve this time).
	outcome publish.Outcome
	addrs   []netip.Addr
	// hostname is the copy's address when given as a name (an AWS NLB's),
	// its addresses resolved into addrs every sync.
	hostname string
	// problem says what went wrong, for WriteFailed, LeftAlone and
	// Unresolved.
	problem string
}
