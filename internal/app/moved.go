package app

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// movedKeys maps a config file key that no longer exists (dotted path) to
// where its setting lives now, so that an old file fails naming the new
// key instead of only "field not found". The index settings were one flat
// map; each index kind now has its own (router.IndexConfig).
var movedKeys = map[string]string{
	"router.index.stride":            "router.index.flash.stride",
	"router.index.blocks_per_worker": "router.index.flash.blocks_per_worker and router.index.radix.blocks_per_worker",
	"router.index.writers":           "router.index.concurrent.writers",
	"router.index.queue_size":        "router.index.concurrent.queue_size",
	"router.index.ttl":               "router.index.approx.ttl",
	"router.index.max_blocks":        "router.index.approx.max_blocks",
	"router.index.prune_fraction":    "router.index.approx.prune_fraction",
}

// movedKeyErrors returns one error per moved key (movedKeys) the YAML
// document b uses, in file order, or nil. It only explains a decoding
// error: a document that is not YAML yields nil.
func movedKeyErrors(b []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil {
		return nil
	}
	var errs []error
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, prefix)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if prefix != "" {
					k = prefix + "." + k
				}
				if now, ok := movedKeys[k]; ok {
					errs = append(errs, fmt.Errorf("line %d: %s is now %s (one config per index kind)", n.Content[i].Line, k, now))
					continue
				}
				walk(n.Content[i+1], k)
			}
		}
	}
	walk(&doc, "")
	return errors.Join(errs...)
}
