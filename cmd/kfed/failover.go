package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
)

func newFailoverCommand() *cobra.Command {
	var (
		kf        kubeconfigFlags
		namespace string
		to        string
		auto      bool
	)
	cmd := &cobra.Command{
		Use:   "failover SERVICE (--to PLACE | --auto)",
		Short: "Pin the place that serves a Service routed by failover, or release it",
		Long: `Failover pins the place that serves a federated Service routed by failover (kfed.io/routing:
failover), for a drill or maintenance: every name of the Service then answers PLACE's clusters only, as
long as PLACE has a healthy cluster with ready replicas. PLACE must be a place of the Service's
kfed.io/failover-order. --auto releases the pin: the order decides again, and traffic returns to a
better place after the failback hold. The pin is the annotation kfed.io/failover-pin on the Service,
which a GitOps tool can write too; kfed status shows which place serves, why and since when.`,
		Example: `  # Serve shop/web from europe-west1 only, for a drill:
  kfed failover web -n shop --to europe-west1

  # Let the failover order decide again:
  kfed failover web -n shop --auto`,
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: completeServices(&kf, &namespace),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (to == "") == !auto {
				return errors.New("give exactly one of --to PLACE and --auto")
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			namespace := kf.namespace(namespace)
			var svc corev1.Service
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			if err := fed.Get(cmd.Context(), key, &svc); err != nil {
				return fmt.Errorf("service %s: %w", key, err)
			}
			if !kfedv1alpha1.IsFederated(&svc) {
				return fmt.Errorf("service %s is not federated", key)
			}
			cfg, _ := serviceconfig.Parse(svc.Annotations)
			if cfg.Routing != serviceconfig.RoutingFailover {
				return fmt.Errorf("service %s is not routed by failover (annotation %s: %s)", key, kfedv1alpha1.AnnotationRouting, serviceconfig.RoutingFailover)
			}
			patch := client.MergeFrom(svc.DeepCopy())
			if auto {
				delete(svc.Annotations, kfedv1alpha1.AnnotationFailoverPin)
			} else {
				if !slices.Contains(cfg.Failover.Order, to) {
					return fmt.Errorf("%q is not a place of %s's %s %v", to, key, kfedv1alpha1.AnnotationFailoverOrder, cfg.Failover.Order)
				}
				svc.Annotations[kfedv1alpha1.AnnotationFailoverPin] = to
			}
			if err := fed.Patch(cmd.Context(), &svc, patch); err != nil {
				return fmt.Errorf("annotating service %s: %w", key, err)
			}
			if auto {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: failover is automatic again\n", key)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: pinned to %s\n", key, to)
			}
			return nil
		},
	}
	kf.add(cmd, "context")
	addNamespaceFlags(cmd, &kf, &namespace, nil, "namespace of the Service (default: the context's namespace, else default)")
	cmd.Flags().StringVar(&to, "to", "", "the place to serve from: a place of the Service's failover order")
	cmd.Flags().BoolVar(&auto, "auto", false, "release the pin: the failover order decides")
	return cmd
}
