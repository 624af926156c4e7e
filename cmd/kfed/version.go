package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kfed's version, VCS revision and Go version",
		Example: `  kfed version
  kfed version -o json`,
		Args: maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			return printVersion(cmd.OutOrStdout(), buildinfo.Get(), output.value)
		},
	}
	output.add(cmd, "text", "json", "yaml")
	return cmd
}

func printVersion(w io.Writer, i buildinfo.Info, output string) error {
	switch output {
	case "text":
		_, err := fmt.Fprintf(w, "version:  %s\nrevision: %s\ngo:       %s\n", i.Version, i.Revision, i.GoVersion)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(i)
	case "yaml":
		b, err := yaml.Marshal(i)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	default:
		return fmt.Errorf("--output must be text or json, not %q", output)
	}
}
