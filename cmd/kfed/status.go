package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/ops/status"
)

// statusView is what status shows and how: the tenancy rule applied to
// DNSEndpoints, the palette, and the scope: a namespace ("" for every one)
// and a Service name ("" for every one).
type statusView struct {
	tenancy   *tenancyFlags
	p         palette
	namespace string
	name      string
}

// inScope says whether an object of namespace ns named name is shown; name
// is "" for objects the Service name does not select (Deployments,
// Balancers, Gateways), which show when their namespace is in scope.
func (v statusView) inScope(ns, name string) bool {
	return (v.namespace == "" || ns == v.namespace) && (v.name == "" || name == "" || name == v.name)
}

// newStatusCommand is `kfed status`. It is longer than 80 lines because it
// declares its help and flags beside the few lines that choose the view.
func newStatusCommand() *cobra.Command {
	var (
		kf            kubeconfigFlags
		tenancy       tenancyFlags
		watch         bool
		color         string
		namespace     string
		allNamespaces bool
		output        outputFlag
	)
	cmd := &cobra.Command{
		Use:   "status [SERVICE]",
		Short: "Show federated Services by cluster (shard, ingress, conditions), federated Deployments by cluster (planned, ready) and Balancers in every cluster",
		Long: `Status shows federated Services by cluster (shard, ingress, health verdict, conditions), federated
Deployments by cluster (planned, ready), the Balancers of every cluster, and the DNS names that
DNSEndpoints ask for and their namespace may not publish (left out of DNS by every reader).

It shows every namespace unless given -n NAMESPACE or a SERVICE (of -n's namespace, default the
context's): status is the federation's overview, as kubectl get nodes is a cluster's. The joined
clusters are always shown. -o wide adds every condition's reason and message; -o json and -o yaml print
each table's rows as objects keyed by its columns.

With --watch it shows them again on every change, as the control plane's and the members' watches report
it (not by polling), until interrupted. Verdicts and conditions are coloured when the output is a terminal
(--color auto, the default), never when NO_COLOR is set or the output is piped.`,
		Example: `  # The whole federation:
  kfed status --context federation

  # Service shop/web only, with every condition's reason:
  kfed status web -n shop -o wide

  # Namespace shop as JSON, for a script:
  kfed status -n shop -o json`,
		Args:              maxArgs("SERVICE"),
		ValidArgsFunction: completeServices(&kf, &namespace),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if allNamespaces && (namespace != "" || len(args) > 0) {
				return fmt.Errorf("-A shows every namespace: give it without -n and SERVICE")
			}
			if watch && output.value != "table" && output.value != "wide" {
				return fmt.Errorf("--watch draws the table: give it without -o %s", output.value)
			}
			p, err := choosePalette(color, cmd.OutOrStdout(), os.Getenv("NO_COLOR") != "")
			if err != nil {
				return err
			}
			_, fed, err := kf.load()
			if err != nil {
				return err
			}
			v := statusView{tenancy: &tenancy, p: p, namespace: namespace}
			if len(args) == 1 {
				v.namespace, v.name = kf.namespace(namespace), args[0]
			}
			switch output.value {
			case "wide":
				v.p.detail = true
			case "json", "yaml":
				v.p = palette{}
				var s sections
				if err := printStatus(cmd.Context(), &s, fed, v); err != nil {
					return err
				}
				return s.print(cmd.OutOrStdout(), output.value)
			}
			if !watch {
				return printStatus(cmd.Context(), cmd.OutOrStdout(), fed, v)
			}
			cfg, err := kf.restConfig()
			if err != nil {
				return err
			}
			draw := func(w io.Writer) error { return printStatus(cmd.Context(), w, fed, v) }
			return watchStatus(cmd.Context(), cmd.OutOrStdout(), fed, cfg, draw, v.p, isTerminal(cmd.OutOrStdout()))
		},
	}
	kf.add(cmd, "context")
	tenancy.add(cmd)
	addNamespaceFlags(cmd, &kf, &namespace, &allNamespaces, "show only this namespace (default: every namespace; with SERVICE, the context's namespace)")
	output.add(cmd, "table", "wide", "json", "yaml")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "show the status again on every change, until interrupted")
	cmd.Flags().StringVar(&color, "color", "auto", "colour verdicts and conditions: auto (when the output is a terminal and NO_COLOR is unset), always or never")
	return cmd
}

func printStatus(ctx context.Context, w io.Writer, fed client.Client, v statusView) error {
	p := v.p
	var cl kfedv1alpha1.ClusterList
	if err := fed.List(ctx, &cl); err != nil {
		return fmt.Errorf("listing clusters: %w", err)
	}
	members := status.Members(ctx, fed, cl.Items)
	if err := printMembers(w, cl.Items, p); err != nil {
		return err
	}

	var svcs corev1.ServiceList
	if err := fed.List(ctx, &svcs); err != nil {
		return fmt.Errorf("listing services: %w", err)
	}
	votes, err := status.ReadVotes(ctx, fed)
	if err != nil {
		return err
	}
	var rows []string
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if !kfedv1alpha1.IsFederated(svc) || !v.inScope(svc.Namespace, svc.Name) {
			continue
		}
		key := client.ObjectKeyFromObject(svc)
		verdicts, federation := status.PublishedVerdicts(ctx, fed, key)
		shares := status.PublishedShares(ctx, fed, key)
		for j, m := range members {
			name := ""
			if j == 0 {
				name = key.String()
			}
			shard, ingress := status.Shard(ctx, m, key, federation)
			endpoint := kfedv1alpha1.EndpointKey(key.Namespace, key.Name, m.Name)
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", name, m.Name, p.ready(m.Ready), p.shard(shard), p.pending(ingress),
				p.verdict(votes.Describe(endpoint, verdicts, m.Name)), votes.DescribeLoad(endpoint, shares[m.Name], time.Now())))
		}
		var conds []string
		for _, c := range svc.Status.Conditions {
			if strings.HasPrefix(c.Type, "kfed.io/") {
				// Every condition of a federated Service is good when True.
				conds = append(conds, p.condition(c.Type, string(c.Status), c.Reason, c.Message, true))
			}
		}
		host := "<pending>"
		if ing := svc.Status.LoadBalancer.Ingress; len(ing) > 0 && ing[0].Hostname != "" {
			host = ing[0].Hostname
		}
		rows = append(rows, fmt.Sprintf("\t%s\t\t\t%s\t\t", p.pending("→ "+host), strings.Join(conds, " ")))
	}
	if err := printTable(w, "SERVICE\tCLUSTER\tCLUSTER READY\tSHARD\tINGRESS\tHEALTH\tLOAD", rows); err != nil {
		return err
	}
	if err := printDeployments(ctx, w, fed, members, v); err != nil {
		return err
	}
	if err := printBalancers(ctx, w, fed, members, v); err != nil {
		return err
	}
	if err := printGateways(ctx, w, fed, v); err != nil {
		return err
	}
	if err := printExports(ctx, w, members, v); err != nil {
		return err
	}
	return printRefused(ctx, w, fed, v)
}

// printExports lists, after a blank line, every name exported or imported
// with the Multi-Cluster Services API in a reachable member, one row per
// cluster holding either: the export's conditions, and the import's type,
// ClusterSetIPs and exporting clusters. Nothing when there are none; a
// member that does not serve the MCS API has none.
func printExports(ctx context.Context, w io.Writer, members []status.Member, v statusView) error {
	p := v.p
	type row struct{ name, cluster, export, imp string }
	var rows []row
	for _, m := range members {
		if m.Err != nil || !m.Ready {
			continue
		}
		var exports mcsv1beta1.ServiceExportList
		var imports mcsv1beta1.ServiceImportList
		if err := m.Client.List(ctx, &exports); err != nil {
			if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
				rows = append(rows, row{"-", m.Name, p.bad(fmt.Sprintf("unreadable: %v", err)), ""})
			}
			continue
		}
		if err := m.Client.List(ctx, &imports); err != nil {
			rows = append(rows, row{"-", m.Name, p.bad(fmt.Sprintf("unreadable: %v", err)), ""})
			continue
		}
		byName := map[string]*row{}
		get := func(ns, name string) *row {
			k := ns + "/" + name
			if r, ok := byName[k]; ok {
				return r
			}
			byName[k] = &row{name: k, cluster: m.Name, export: "-", imp: "-"}
			return byName[k]
		}
		exports.Items = slices.DeleteFunc(exports.Items, func(e mcsv1beta1.ServiceExport) bool { return !v.inScope(e.Namespace, e.Name) })
		imports.Items = slices.DeleteFunc(imports.Items, func(i mcsv1beta1.ServiceImport) bool { return !v.inScope(i.Namespace, i.Name) })
		for _, e := range exports.Items {
			var conds []string
			for _, c := range e.Status.Conditions {
				// Valid and Ready are good when True; Conflict when False.
				conds = append(conds, p.condition(c.Type, string(c.Status), c.Reason, c.Message,
					c.Type != string(mcsv1beta1.ServiceExportConditionConflict)))
			}
			get(e.Namespace, e.Name).export = strings.Join(conds, " ")
		}
		for _, i := range imports.Items {
			var from []string
			for _, c := range i.Status.Clusters {
				from = append(from, c.Cluster)
			}
			ips := strings.Join(i.Spec.IPs, ",")
			if ips == "" {
				ips = "-"
			}
			get(i.Namespace, i.Name).imp = fmt.Sprintf("%s %s from %s", i.Spec.Type, ips, strings.Join(from, ","))
		}
		for _, r := range byName {
			rows = append(rows, *r)
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.cluster, b.cluster))
	})
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s", r.name, r.cluster, r.imp, r.export))
	}
	return printSection(w, "EXPORTED SERVICE\tCLUSTER\tIMPORT\tEXPORT", lines)
}

// printGateways lists the federated Gateways and Ingresses, after a blank
// line: their members' addresses and kfed's conditions (an Ingress keeps
// them in an annotation). Nothing when there are none, or when the control
// plane serves no Gateways.
func printGateways(ctx context.Context, w io.Writer, fed client.Client, v statusView) error {
	p := v.p
	var rows []string
	row := func(kind string, obj client.Object, addrs []string, conds []metav1.Condition) {
		var cs []string
		for _, c := range conds {
			if strings.HasPrefix(c.Type, "kfed.io/") {
				cs = append(cs, p.condition(c.Type, string(c.Status), c.Reason, c.Message, true))
			}
		}
		rows = append(rows, fmt.Sprintf("%s %s/%s\t%s\t%s", kind, obj.GetNamespace(), obj.GetName(), dash(strings.Join(addrs, ",")), strings.Join(cs, " ")))
	}
	var gws gatewayv1.GatewayList
	switch err := fed.List(ctx, &gws); {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("listing gateways: %w", err)
	}
	for i := range gws.Items {
		gw := &gws.Items[i]
		if gw.Annotations[kfedv1alpha1.AnnotationFederated] != "true" || !v.inScope(gw.Namespace, "") {
			continue
		}
		var addrs []string
		for _, a := range gw.Status.Addresses {
			addrs = append(addrs, a.Value)
		}
		row("Gateway", gw, addrs, gw.Status.Conditions)
	}
	var ings networkingv1.IngressList
	if err := fed.List(ctx, &ings); err != nil {
		return fmt.Errorf("listing ingresses: %w", err)
	}
	for i := range ings.Items {
		ing := &ings.Items[i]
		if ing.Annotations[kfedv1alpha1.AnnotationFederated] != "true" || !v.inScope(ing.Namespace, "") {
			continue
		}
		var addrs []string
		for _, a := range ing.Status.LoadBalancer.Ingress {
			addrs = append(addrs, a.IP+a.Hostname)
		}
		var conds []metav1.Condition
		_ = json.Unmarshal([]byte(ing.Annotations[kfedv1alpha1.AnnotationConditions]), &conds) // a bad value reads as none
		row("Ingress", ing, addrs, conds)
	}
	return printSection(w, "GATEWAY OR INGRESS\tADDRESSES\tCONDITIONS", rows)
}

// printRefused lists, after a blank line, each endpoint of kfed's
// DNSEndpoints that the tenancy rule refuses: the object, the record and
// why. Nothing when there is none.
func printRefused(ctx context.Context, w io.Writer, fed client.Client, v statusView) error {
	p := v.p
	var list extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &list, client.MatchingLabels(dnsendpoint.Selector(""))); err != nil {
		return fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	list.Items = slices.DeleteFunc(list.Items, func(ep extdnsv1alpha1.DNSEndpoint) bool { return !v.inScope(ep.Namespace, ep.Name) })
	var rows []string
	for _, r := range refusedRows(list.Items, v.tenancy) {
		f := strings.SplitN(r, "\t", 3)
		rows = append(rows, f[0]+"\t"+p.bad(f[1])+"\t"+f[2])
	}
	return printSection(w, "DNSENDPOINT\tREFUSED\tWHY", rows)
}

// printMembers lists the joined clusters, with their place: region, zones
// and where kfed locates them (proximity routing orders by it), then a blank
// line. Nothing when there are none.
func printMembers(w io.Writer, members []kfedv1alpha1.Cluster, p palette) error {
	if len(members) == 0 {
		return nil
	}
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b kfedv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	var rows []string
	for i := range members {
		c := &members[i]
		region, zones := c.Location()
		where := "-"
		if l := c.Status.Location; l != nil {
			where = l.Latitude + "," + l.Longitude
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", c.Name, p.ready(meta.IsStatusConditionTrue(c.Status.Conditions, kfedv1alpha1.ClusterReady)),
			dash(region), dash(strings.Join(zones, ",")), where, drainedSince(c, p)))
	}
	if err := printTable(w, "CLUSTER\tREADY\tREGION\tZONES\tLOCATION\tDRAINED", rows); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// drainedSince is a member's DRAINED cell: "-", or since when it is out
// of every answer (kfed drain), "yes" until the controller says when.
func drainedSince(c *kfedv1alpha1.Cluster, p palette) string {
	if !c.Spec.Drained {
		return "-"
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, kfedv1alpha1.ClusterDrained); cond != nil && cond.Status == metav1.ConditionTrue {
		return p.warn("since " + cond.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	return p.warn("yes")
}

// printDeployments lists the federated Deployments by cluster, after a blank
// line, from the per-cluster table kfed keeps on each: replicas planned and
// ready there, and whether the cluster is full. Nothing when there are none.
func printDeployments(ctx context.Context, w io.Writer, fed client.Client, members []status.Member, v statusView) error {
	p := v.p
	var deps appsv1.DeploymentList
	if err := fed.List(ctx, &deps); err != nil {
		return fmt.Errorf("listing deployments: %w", err)
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Name)
	}
	var rows []string
	for i := range deps.Items {
		if d := &deps.Items[i]; kfedv1alpha1.IsFederated(d) && v.inScope(d.Namespace, "") {
			rows = append(rows, deploymentRows(p, d, names)...)
		}
	}
	return printSection(w, "DEPLOYMENT\tCLUSTER\tPLANNED\tREADY\tNOTE", rows)
}

// deploymentRows are one federated Deployment's rows: one per joined
// cluster (those it has no replicas in show "-"), then its desired and ready
// totals and its kfed conditions.
func deploymentRows(p palette, d *appsv1.Deployment, clusters []string) []string {
	table, _, err := clusterreplicas.Read(d.Annotations)
	var rows []string
	for i, name := range clusters {
		key := ""
		if i == 0 {
			key = d.Namespace + "/" + d.Name
		}
		row, ok := table[name]
		if !ok {
			rows = append(rows, fmt.Sprintf("%s\t%s\t-\t-\t", key, name))
			continue
		}
		note := ""
		if row.Capacity != nil {
			note = p.warn(fmt.Sprintf("full: runs %d, %d waiting", *row.Capacity, row.Waiting))
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%d\t%d\t%s", key, name, row.Planned, row.Ready, note))
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	var conds []string
	if err != nil {
		conds = append(conds, p.bad(err.Error()))
	}
	for _, c := range d.Status.Conditions {
		if strings.HasPrefix(string(c.Type), "kfed.io/") {
			// Synced is good when True; the others (ControlPlaneWorkloads)
			// report a problem when True.
			conds = append(conds, p.condition(string(c.Type), string(c.Status), c.Reason, c.Message, c.Type == kfedv1alpha1.DeploymentSynced))
		}
	}
	return append(rows, fmt.Sprintf("\t→ total\t%d\t%d\t%s", desired, d.Status.ReadyReplicas, strings.Join(conds, " ")))
}

// printBalancers lists the Balancers of the control plane and of every
// reachable member, one row each, after a blank line; nothing when there are
// none. A cluster that does not serve Balancers has none.
func printBalancers(ctx context.Context, w io.Writer, fed client.Client, members []status.Member, v statusView) error {
	p := v.p
	var rows []string
	add := func(cluster string, c client.Client) {
		var list kfedv1alpha1.BalancerList
		if err := c.List(ctx, &list); err != nil {
			if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
				rows = append(rows, fmt.Sprintf("-\t%s\t\t\t\t\t%s", cluster, p.bad(fmt.Sprintf("unreadable: %v", err))))
			}
			return
		}
		for i := range list.Items {
			if v.inScope(list.Items[i].Namespace, "") {
				rows = append(rows, balancerRow(p, cluster, &list.Items[i]))
			}
		}
	}
	add("federation", fed)
	for _, m := range members {
		if m.Err == nil && m.Ready {
			add(m.Name, m.Client)
		}
	}
	return printSection(w, "BALANCER\tCLUSTER\tDESIRED\tCURRENT\tPOLICY\tTARGETS\tCONDITIONS", rows)
}

// balancerRow is one Balancer: each target as planned/running, with pods
// pending and pending past the startup timeout when there are any, and its
// conditions as in the Service rows.
func balancerRow(p palette, cluster string, b *kfedv1alpha1.Balancer) string {
	var targets []string
	for _, t := range b.Status.Targets {
		s := fmt.Sprintf("%s=%d/%d", t.Name, t.Replicas, t.Running)
		if t.Pending > 0 {
			s += fmt.Sprintf(" (%d pending", t.Pending)
			if t.NotStarted > 0 {
				s += fmt.Sprintf(", %d past timeout", t.NotStarted)
			}
			s += ")"
		}
		targets = append(targets, s)
	}
	var conds []string
	for _, c := range b.Status.Conditions {
		// Balanced is good when True; Fallback reports a problem when True.
		conds = append(conds, p.condition(c.Type, string(c.Status), c.Reason, c.Message, c.Type == kfedv1alpha1.BalancerBalanced))
	}
	return fmt.Sprintf("%s/%s\t%s\t%d\t%d\t%s\t%s\t%s", b.Namespace, b.Name, cluster, b.Spec.Replicas, b.Status.Replicas,
		b.Spec.Policy.PolicyName, strings.Join(targets, " "), strings.Join(conds, " "))
}
