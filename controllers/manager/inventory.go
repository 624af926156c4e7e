package manager

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/controllers/inventory"
)

// InventoryOptions say where kfed's members come from besides kfed join, and
// where kfed lists its own.
type InventoryOptions struct {
	// Inventory is "" (members are joined with kfed join only) or
	// kfedv1alpha1.InventoryClusterProfile.
	Inventory string
	// InventoryNamespace holds the ClusterProfiles kfed federates to.
	InventoryNamespace string
	// InventorySelector, if set, picks those profiles by label (a
	// clusterset: multicluster.x-k8s.io/clusterset=NAME).
	InventorySelector labels.Selector
	// Access maps the profiles' access providers to exec plugins
	// (--clusterprofile-provider-file); required with an inventory.
	Access *access.Config
	// ProfileNamespace holds the ClusterProfiles kfed writes for its joined
	// clusters; Namespace when empty.
	ProfileNamespace string
}

func (o InventoryOptions) check() error {
	switch o.Inventory {
	case "":
		return nil
	case kfedv1alpha1.InventoryClusterProfile:
		if o.InventoryNamespace == "" {
			return fmt.Errorf("--inventory %s needs --inventory-namespace", o.Inventory)
		}
		if o.Access == nil {
			return fmt.Errorf("--inventory %s needs --clusterprofile-provider-file", o.Inventory)
		}
		return nil
	}
	return fmt.Errorf("--inventory %q: want %q or nothing", o.Inventory, kfedv1alpha1.InventoryClusterProfile)
}

// addInventory registers the inventory's controllers: the Importer with an
// inventory; the Exporter and the PlacementDecision writers whenever the
// Cluster Inventory API is served (an informer for a kind that is not
// would never sync and hold up every controller).
func addInventory(mgr ctrl.Manager, o Options, _ *registry.Registry) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	profiles := registry.CannotWatch(ctx, mgr, &inventoryv1alpha1.ClusterProfile{})
	decisions := registry.CannotWatch(ctx, mgr, &inventoryv1alpha1.PlacementDecision{})
	if o.Inventory.Inventory != "" {
		if profiles != "" {
			return fmt.Errorf("--inventory %s: cannot watch ClusterProfiles: %s", o.Inventory.Inventory, profiles)
		}
		im := &inventory.Importer{
			Fed: mgr.GetClient(), Recorder: recorder(mgr, "kfed-inventory"),
			Namespace: o.Inventory.InventoryNamespace, Selector: o.Inventory.InventorySelector,
		}
		if err := im.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the inventory importer: %w", err)
		}
	}
	ns := o.Inventory.ProfileNamespace
	if ns == "" {
		ns = o.Namespace
	}
	if profiles != "" {
		o.Logger.Info("not writing ClusterProfiles", "reason", profiles)
	} else if err := (&inventory.Exporter{Fed: mgr.GetClient(), Namespace: ns}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the inventory exporter: %w", err)
	}
	if decisions != "" {
		o.Logger.Info("not writing PlacementDecisions", "reason", decisions)
		return nil
	}
	// Gateways and Ingresses as addGateways federates them: where kfed can
	// watch them.
	gws := registry.CannotWatch(ctx, mgr, &gatewayv1.Gateway{}) == ""
	ingresses := registry.CannotWatch(ctx, mgr, &networkingv1.Ingress{}) == ""
	for _, d := range inventory.NewDecisions(mgr.GetClient(), recorder(mgr, "kfed-placement"), ns, gws, ingresses) {
		if err := d.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s PlacementDecisions: %w", d.Kind, err)
		}
	}
	return nil
}
