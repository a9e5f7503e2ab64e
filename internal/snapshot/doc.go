// Package snapshot saves and restores the router's prefix index through a
// JetStream object store, so a starting replica does not replay the whole
// stream.
//
// A snapshot is the index Dump() (Stored events, parents first) plus the
// eventplane.Position it covers: the last stream sequence applied and the
// last event id per worker+rank. Manager.Run takes one, through the
// subscriber's Checkpoint (ingestion pauses for the Dump so index and
// position agree), whenever Config.Every events were applied since the
// last one, or Config.Interval passed with any new event, and keeps the
// newest Config.Keep.
//
// A replica starts with Restore (newest snapshot into the index), then runs
// an eventplane.Subscriber from the returned Position, and reports ready
// when the subscriber's Ready closes.
//
// Object format: a JSON header line, '\n', then the events as one
// eventplane envelope (msgpack batch). Objects are input from whoever can
// write the bucket: a read refuses an object beyond Config.MaxBytes
// before allocating for it, and a header whose event count does not fit
// the body (MinEventBytes each) before allocating for the events; Latest
// skips such an object (logged, Stats.Skipped) for the next older one.
// Manager is safe for concurrent use.
package snapshot
