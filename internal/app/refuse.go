package app

import "github.com/kvrouter/kvrouter/internal/discovery"

// Refuse forwards refusals the registry makes before a Join (undecodable
// entries, bad keys) to the fleet, which counts them.
func (j joinKick) Refuse(id uint64, reason string, err error) {
	if r, ok := j.Membership.(discovery.Refuser); ok {
		r.Refuse(id, reason, err)
	}
}
