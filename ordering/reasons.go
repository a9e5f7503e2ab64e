package ordering

// Ingestion outcome reasons: the one spelling of the label values the
// shells export (kvrouter_events_rejected_total for refused input,
// kvrouter_event_faults_total for stream faults) and show per worker in
// /debug/index.
const (
	RejectDecode            = "decode"               // undecodable message or event
	RejectBlockSize         = "block_size"           // engine block size differs from the router's
	RejectUnknownPod        = "unknown_pod"          // bind-mode topic names no worker (held a while)
	RejectUnknownPodExpired = "unknown_pod_expired"  // held for an unknown pod, then dropped
	RejectModelMismatch     = "model_mismatch"       // the topic's model is not the worker's
	RejectWorkerMismatch    = "worker_mismatch"      // the payload's worker is not the subject's
	RejectUnregistered      = "unregistered"         // held for a worker neither registered nor static, dropped past the hold's bounds
	RejectUnregisteredDrop  = "unregistered_expired" // held for an unregistered worker, dropped when it did not register in time
	RejectUnknownParent     = "unknown_parent"       // index: the chain's position is undeterminable
	RejectSelfParent        = "self_parent"
	RejectBadEvent          = "bad_event"
	RejectUnknownGroup      = "unknown_group" // a KV cache group kind the router does not model (DESIGN.md §13): skipped, never filed as full attention
	RejectOther             = "other"

	FaultGap         = "gap"          // a gap opened (then replayed, reordered or resynced)
	FaultResync      = "resync"       // a gap could not be filled: worker+rank cleared
	FaultRestart     = "restart"      // the publisher started over: worker+rank cleared
	FaultStreamReset = "stream_reset" // the NATS stream started over: index rebuilt
)

// IsFault reports whether reason is a stream fault rather than refused
// input.
func IsFault(reason string) bool {
	switch reason {
	case FaultGap, FaultResync, FaultRestart, FaultStreamReset:
		return true
	}
	return false
}
