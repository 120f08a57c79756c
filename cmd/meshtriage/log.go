package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLogCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "log",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("log: not implemented yet") },
	}
}
