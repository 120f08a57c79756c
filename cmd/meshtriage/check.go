package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCheckCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("check: not implemented yet") },
	}
}
