// Package remote is a [tokenizer.Tokenizer] that asks an inference worker's
// /tokenize endpoint (vLLM's API, also served by SGLang and compatible
// servers) for token ids, so router and engine agree exactly even for models
// the in-process tokenizer cannot load (e.g. T5/XLM-R style files with a
// Precompiled normalizer, WordPiece).
//
// Wire format (vLLM, POST {base}/tokenize):
//
//	completion: {"model": M, "prompt": P, "add_special_tokens": true}
//	chat:       {"model": M, "messages": [...], "add_generation_prompt": G, "add_special_tokens": false}
//	response:   {"count": N, "max_model_len": L, "tokens": [ids...]}
//
// Every call is one HTTP round trip bounded by its context; endpoints are
// tried in order until one answers (connection errors and 5xx move on to
// the next; 4xx is final; a non-2xx answer is a *StatusError). Safe for
// concurrent use.
package remote
