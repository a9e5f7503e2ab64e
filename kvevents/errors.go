package kvevents

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every error about input that is not valid for
// its format: bad JSON or msgpack, wrong types, missing required fields,
// numbers out of range. Test with errors.Is.
var ErrMalformed = errors.New("kvevents: malformed event")

// BlockSizeError reports a vLLM/SGLang BlockStored whose block_size differs
// from the configured one (DESIGN.md §1: a mismatch would silently yield zero
// overlap, so it is rejected loudly instead). Test with errors.As.
type BlockSizeError struct {
	Got  int // block_size carried by the event
	Want int // block size the decoder was configured with
}

func (e *BlockSizeError) Error() string {
	return fmt.Sprintf("kvevents: engine block size %d differs from configured block size %d", e.Got, e.Want)
}

// TokenCountError reports a BlockStored whose token_ids do not cover its
// blocks exactly: len(token_ids) != len(block_hashes) * block_size.
type TokenCountError struct {
	Tokens    int // len(token_ids) (token pairs for EAGLE payloads)
	Blocks    int // len(block_hashes)
	BlockSize int
}

func (e *TokenCountError) Error() string {
	return fmt.Sprintf("kvevents: %d token ids for %d blocks of %d tokens (want %d)",
		e.Tokens, e.Blocks, e.BlockSize, e.Blocks*e.BlockSize)
}

// EventError wraps the error of one event inside a batch: the batch itself
// was well-formed, so the other events were still decoded. Index is the
// event's position in the payload's event list, Tag its type tag.
type EventError struct {
	Index int
	Tag   string
	Err   error
}

func (e *EventError) Error() string {
	if e.Tag == "" {
		return fmt.Sprintf("event %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("event %d (%s): %v", e.Index, e.Tag, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }
