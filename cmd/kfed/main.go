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

	"github.com/kfed-io/kfed/internal/buildinfo"
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
		Example: `  # A federation on this machine, and what it serves:
  kfed dev up
  kfed status --kubeconfig .kfed-dev/kubeconfig

  # Register a member cluster with the federation of context "federation":
  kfed join cluster-1 --member-context cluster-1 --context federation

  # Completion of commands, flags and live names (Services, clusters) in bash:
  source <(kfed completion bash)`,
	}
	root.SetVersionTemplate("kfed {{.Version}}\n")
	// --version has no -v: kubectl's habit keeps -v for verbosity, which
	// kfed-healthcheck and kfed-controller take.
	root.Flags().Bool("version", false, "print kfed's version (kfed version -o json says more)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newDevCommand(),
		newJoinCommand(),
		newUnjoinCommand(),
		newAgentKubeconfigCommand(),
		newStatusCommand(),
		newDNSCommand(),
		newFailoverCommand(),
		newDrainCommand(),
		newUndrainCommand(),
		newPlanCommand(),
		newCheckCommand(),
		newExplainCommand(),
		newVersionCommand(),
	)
	// kfed's own completion command, not cobra's default one: that one
	// exits 0 with its help for an unknown shell.
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newCompletionCommand())
	return root
}
