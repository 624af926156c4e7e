// Command kfed is the one CLI kfed users type: it starts a local federation
// (kfed dev up), registers member clusters (kfed join), plans replicas
// (kfed plan), shows and publishes the federation's DNS, and says its own
// version (kfed version).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kfed-io/kfed/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "kfed:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kfed",
		Short:         "Federate Kubernetes Services across clusters and balance them with DNS",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Get().String(),
	}
	root.SetVersionTemplate("kfed {{.Version}}\n")
	root.AddCommand(
		newDevCommand(),
		newJoinCommand(),
		newUnjoinCommand(),
		newStatusCommand(),
		newDNSCommand(),
		newFailoverCommand(),
		newDrainCommand(),
		newUndrainCommand(),
		newPlanCommand(),
		newCheckCommand(),
		newVersionCommand(),
	)
	return root
}
