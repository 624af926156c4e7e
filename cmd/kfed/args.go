package main

// What every command shares in how it reads its command line: arguments
// named in errors, -o's values, and completion of live names.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// exactArgs takes one argument for each of names, and names the first one
// missing (cobra says "accepts 1 arg(s), received 0").
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return fmt.Errorf("missing %s: usage: %s (see %s --help)", names[len(args)], cmd.UseLine(), cmd.CommandPath())
		}
		return maxArgs(names...)(cmd, args)
	}
}

// maxArgs takes at most one argument for each of names.
func maxArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) <= len(names) {
			return nil
		}
		takes := "no arguments"
		if len(names) > 0 {
			takes = "only " + strings.Join(names, " ")
		}
		return fmt.Errorf("%s takes %s, not %q: usage: %s", cmd.CommandPath(), takes, args, cmd.UseLine())
	}
}

// groupOf makes cmd, a command that only holds others (kfed dns), print
// its help when given none, as kubectl's do, and refuse an unknown one:
// cobra prints the help and exits 0 for `kfed dns publish`.
func groupOf(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return fmt.Errorf("unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())
	}
	return cmd
}

// flagError adds where to read about the flags to cobra's "unknown flag"
// and "invalid argument" errors.
func flagError(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
}

// outputFlag is -o: how a command prints what it shows. The first of
// formats is the default.
type outputFlag struct {
	value   string
	formats []string
}

func (o *outputFlag) add(cmd *cobra.Command, formats ...string) {
	o.formats = formats
	cmd.Flags().StringVarP(&o.value, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// validate refuses a format the command does not print, before anything is
// read.
func (o *outputFlag) validate() error {
	if !slices.Contains(o.formats, o.value) {
		return fmt.Errorf("--output %q: want %s", o.value, strings.Join(o.formats, ", "))
	}
	return nil
}

// listLive lists objects of the control plane the flags name, for
// completion of live names.
func listLive(cmd *cobra.Command, kf *kubeconfigFlags, list client.ObjectList, opts ...client.ListOption) error {
	_, fed, err := kf.load()
	if err != nil {
		return err
	}
	return fed.List(cmd.Context(), list, opts...)
}

// completeClusters completes the first argument with the names of the
// joined clusters, read from the control plane the flags name.
func completeClusters(kf *kubeconfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var list kfedv1alpha1.ClusterList
		if err := listLive(cmd, kf, &list); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, c := range list.Items {
			region, _ := c.Location()
			out = append(out, cobra.CompletionWithDesc(c.Name, region))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeServices completes the first argument with the federated
// Services of the namespace *ns (or the context's).
func completeServices(kf *kubeconfigFlags, ns *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var list corev1.ServiceList
		if err := listLive(cmd, kf, &list, client.InNamespace(kf.namespace(*ns))); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for i := range list.Items {
			if kfedv1alpha1.IsFederated(&list.Items[i]) {
				out = append(out, list.Items[i].Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeContexts completes the first argument with the kubeconfig's
// contexts: join's NAME is the member's context by default.
func completeContexts(kf *kubeconfigFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return contextNames(kf)
	}
}

// addNamespaceFlags adds kubectl's -n and -A to a command that lists
// objects, with completion of namespaces; usage says what -n's default is.
func addNamespaceFlags(cmd *cobra.Command, kf *kubeconfigFlags, ns *string, all *bool, usage string) {
	cmd.Flags().StringVarP(ns, "namespace", "n", "", usage)
	if all != nil {
		cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, "every namespace")
	}
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var list corev1.NamespaceList
		if err := listLive(cmd, kf, &list); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, n := range list.Items {
			out = append(out, n.Name)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
