package dnsendpoint

import kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"

// Selector is the label selector every reader of a federation's
// DNSEndpoints lists and watches with: the labels the services controller
// writes. Labels say which objects to read, not which names to believe: any
// tenant can copy them, so what a reader takes from the objects selected is
// decided by Tenancy.
//
// An empty federation selects every federation's DNSEndpoints, as the CLI
// lists them when it is not told one.
func Selector(federation string) map[string]string {
	sel := map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}
	if federation != "" {
		sel[kfedv1alpha1.LabelFederation] = federation
	}
	return sel
}
