package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCommand is `kfed completion SHELL`: the script that
// completes kfed's commands and flags, and the live names of the
// federation's Services, clusters and contexts that kfed reads when you
// press Tab.
func newCompletionCommand() *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script of kfed's commands, flags and live names",
		Long: `Completion prints a script that completes kfed's commands and flags in SHELL, and the names it
reads live from the federation's control plane when you press Tab: Services (status, dns plan,
failover), joined clusters (unjoin), kubeconfig contexts (--context, --member-context, join's NAME)
and namespaces (-n).`,
		Example: `  # bash, this shell only (needs the bash-completion package):
  source <(kfed completion bash)

  # zsh, every new shell:
  kfed completion zsh > "${fpath[1]}/_kfed"

  # fish:
  kfed completion fish > ~/.config/fish/completions/kfed.fish`,
		ValidArgs: shells,
		Args:      exactArgs("SHELL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(w)
			}
			return flagError(cmd, fmt.Errorf("unknown shell %q: want bash, zsh, fish or powershell", args[0]))
		},
	}
}
