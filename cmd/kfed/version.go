package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kfed-io/kfed/buildinfo"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kfed's version, VCS revision and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), buildinfo.Get(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
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
	default:
		return fmt.Errorf("--output must be text or json, not %q", output)
	}
}
