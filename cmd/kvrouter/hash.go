package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kvrouter/kvrouter/kvhash"
)

func newHashCmd() *cobra.Command {
	var blockSize int
	var lora, namespace string
	c := &cobra.Command{
		Use:   "hash --block-size B [--lora NAME] [--namespace NS] TOKEN...",
		Short: "Print the local and sequence hash of every full block of a token list",
		Long: `hash cuts the given token ids into blocks of --block-size tokens and prints one
line per full block: "<block index> <local hash> <sequence hash>" (decimal uint64).
A trailing partial block is not hashed. Use it to check that the router and an
engine agree on block hashes (DESIGN.md §1).`,
		Example: "  kvrouter hash --block-size 4 0 1 2 3 4 5 6 7",
		RunE: func(cmd *cobra.Command, args []string) error {
			if blockSize <= 0 {
				return fmt.Errorf("--block-size must be a positive integer, got %d", blockSize)
			}
			tokens := make([]uint32, len(args))
			for i, a := range args {
				v, err := strconv.ParseUint(a, 10, 32)
				if err != nil {
					return fmt.Errorf("token %d (%q) is not a uint32: %w", i, a, err)
				}
				tokens[i] = uint32(v)
			}
			if len(tokens) < blockSize {
				return fmt.Errorf("%d tokens make no full block of %d", len(tokens), blockSize)
			}
			locals := kvhash.LocalHashes(tokens, blockSize, kvhash.Seed(lora, namespace))
			seqs := kvhash.SeqHashes(locals)
			w := cmd.OutOrStdout()
			for i := range locals {
				fmt.Fprintf(w, "%d %d %d\n", i, locals[i], seqs[i])
			}
			return nil
		},
	}
	c.Flags().IntVar(&blockSize, "block-size", 0, "tokens per block (required; must equal the engine's)")
	c.Flags().StringVar(&lora, "lora", "", "LoRA adapter name folded into the seed")
	c.Flags().StringVar(&namespace, "namespace", "", "cache namespace folded into the seed")
	_ = c.MarkFlagRequired("block-size")
	return c
}
