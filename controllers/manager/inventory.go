package manager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/access"
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
