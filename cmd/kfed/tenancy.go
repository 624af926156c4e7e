package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// tenancyFlags hold --trusted-namespaces, for the commands that read
// DNSEndpoints: each applies the tenancy rule as kfed-controller and the
// CoreDNS plugin do, so that what they show is what is published.
type tenancyFlags struct{ trusted []string }

func (f *tenancyFlags) add(cmd *cobra.Command) {
	f.trusted = []string{kfedv1alpha1.DefaultNamespace}
	cmd.Flags().Func("trusted-namespaces", tenancy.TrustedFlagUsage, func(s string) (err error) {
		f.trusted, err = tenancy.ParseNamespaces(s)
		return err
	})
}

// rule is the tenancy rule for ep: that of the federation its labels name.
// The CLI reads the DNSEndpoints of every federation unless told one; an
// object is judged as one of the federation it claims, which refuses it
// every other federation's names too.
func (f *tenancyFlags) rule(ep *extdnsv1alpha1.DNSEndpoint) tenancy.Endpoints {
	return tenancy.NewEndpoints(ep.Labels[kfedv1alpha1.LabelFederation], f.trusted)
}

// admit returns what the rule admits of eps, and a line for each refused
// endpoint.
func (f *tenancyFlags) admit(eps []extdnsv1alpha1.DNSEndpoint) ([]extdnsv1alpha1.DNSEndpoint, []string) {
	out := make([]extdnsv1alpha1.DNSEndpoint, 0, len(eps))
	var refusals []string
	for i := range eps {
		ep, refused := f.rule(&eps[i]).Admit(&eps[i])
		out = append(out, *ep)
		for _, r := range refused {
			refusals = append(refusals, fmt.Sprintf("%s/%s: %s %s not published: %s", ep.Namespace, ep.Name, r.RecordType, r.Name, r.Reason))
		}
	}
	return out, refusals
}

// desired is dnssync.Desired of eps, each federation's under its own rule.
func (f *tenancyFlags) desired(eps []extdnsv1alpha1.DNSEndpoint) []dnsprovider.RecordSet {
	byFederation := map[string][]extdnsv1alpha1.DNSEndpoint{}
	for _, ep := range eps {
		fed := ep.Labels[kfedv1alpha1.LabelFederation]
		byFederation[fed] = append(byFederation[fed], ep)
	}
	var out []dnsprovider.RecordSet
	for _, fed := range slices.Sorted(maps.Keys(byFederation)) {
		out = append(out, dnssync.Desired(tenancy.NewEndpoints(fed, f.trusted), byFederation[fed])...)
	}
	return out
}

// printRefusals writes each refusal on a line of w, prefixed by the
// command's name.
func printRefusals(w io.Writer, command string, refusals []string) {
	for _, r := range refusals {
		fmt.Fprintf(w, "%s: %s\n", command, r)
	}
}

// refusedRows are the rows of kfed status's table of refused names.
func refusedRows(eps []extdnsv1alpha1.DNSEndpoint, f *tenancyFlags) []string {
	var rows []string
	for i := range eps {
		ep := &eps[i]
		_, refused := f.rule(ep).Admit(ep)
		for _, r := range refused {
			rows = append(rows, strings.Join([]string{ep.Namespace + "/" + ep.Name, r.RecordType + " " + r.Name, r.Reason}, "\t"))
		}
	}
	slices.SortStableFunc(rows, func(a, b string) int { return cmp.Compare(a, b) })
	return rows
}
