package epp

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
)

// ProtocolConfig configures the ext_proc protocol side of the endpoint picker.
type ProtocolConfig struct {
	// RequestBodyMode is the request body mode assumed when Envoy sends
	// no protocol_config (Envoy before 1.33; newer ones say it on each
	// stream's first message, which wins): FULL_DUPLEX_STREAMED, BUFFERED,
	// STREAMED or NONE. Default FULL_DUPLEX_STREAMED (the inference
	// extension's gateways); zero (NONE) = no body, picks by load alone.
	RequestBodyMode filterv3.ProcessingMode_BodySendMode `yaml:"-"`
	// ResponseBodyMode is the response body mode assumed likewise.
	// Default FULL_DUPLEX_STREAMED (each chunk is echoed back as a
	// streamed response); any other mode is answered chunk by chunk with
	// CONTINUE.
	ResponseBodyMode filterv3.ProcessingMode_BodySendMode `yaml:"-"`
	// BodyMode is RequestBodyMode and ResponseBodyMode in text form, as
	// flags and the YAML file give it ("full-duplex-streamed",
	// "buffered", "streamed", "none"); "" keeps the two fields. Default
	// "full-duplex-streamed".
	BodyMode string `yaml:"body_mode"`
	// DestinationNamespace is the dynamic metadata namespace of the pick.
	// Default "envoy.lb"; "" = default.
	DestinationNamespace string `yaml:"destination_namespace"`
	// SubsetNamespace is the filter metadata namespace of the subset hint.
	// Default "envoy.lb.subset_hint"; "" = default.
	SubsetNamespace string `yaml:"subset_namespace"`
	// Fallbacks is how many fallback endpoints follow the pick in the
	// destination ("ip:port,ip:port,...", the protocol's list since
	// v0.4.0), the next cheapest workers first: a proxy with retries
	// configured goes down the list when the pick fails, and the endpoint
	// it reports as served then carries the request's load. Default 0
	// (the pick alone, which every proxy version understands); at most
	// MaxFallbacks.
	Fallbacks int `yaml:"fallbacks"`
	// Logger; default slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// MaxFallbacks bounds ProtocolConfig.Fallbacks.
const MaxFallbacks = 16

// DefaultConfig returns the protocol defaults.
func DefaultProtocolConfig() ProtocolConfig {
	return ProtocolConfig{
		RequestBodyMode:      filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
		ResponseBodyMode:     filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
		BodyMode:             "full-duplex-streamed",
		DestinationNamespace: DefaultDestinationNamespace,
		SubsetNamespace:      DefaultSubsetNamespace,
	}
}

// ParseBodyMode parses a body mode's text form: the Envoy enum name in
// any case, '-' for '_'.
func ParseBodyMode(s string) (filterv3.ProcessingMode_BodySendMode, error) {
	v, ok := filterv3.ProcessingMode_BodySendMode_value[strings.ToUpper(strings.ReplaceAll(s, "-", "_"))]
	if !ok || v == int32(filterv3.ProcessingMode_GRPC) {
		return 0, fmt.Errorf("epp: unknown body mode %q (want full-duplex-streamed, buffered, streamed or none)", s)
	}
	return filterv3.ProcessingMode_BodySendMode(v), nil
}

// Validate reports every problem, joined.
func (c ProtocolConfig) Validate() error {
	var errs []error
	if c.Fallbacks < 0 || c.Fallbacks > MaxFallbacks {
		errs = append(errs, fmt.Errorf("epp: fallbacks %d not in [0, %d]", c.Fallbacks, MaxFallbacks))
	}
	if c.BodyMode != "" {
		if _, err := ParseBodyMode(c.BodyMode); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *ProtocolConfig) setDefaults() {
	if c.BodyMode != "" {
		m, _ := ParseBodyMode(c.BodyMode) // validated
		c.RequestBodyMode, c.ResponseBodyMode = m, m
	}
	d := DefaultProtocolConfig()
	if c.DestinationNamespace == "" {
		c.DestinationNamespace = d.DestinationNamespace
	}
	if c.SubsetNamespace == "" {
		c.SubsetNamespace = d.SubsetNamespace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
