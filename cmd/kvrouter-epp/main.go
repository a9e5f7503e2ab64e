package main

import (
	"os"

	"github.com/kvrouter/kvrouter/internal/cli"
)

func main() { os.Exit(cli.Execute(newEPPCmd())) }
