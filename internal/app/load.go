package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/kvrouter/kvrouter/internal/clihelp"
	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts the environment variable of every flag.
const EnvPrefix = "KVROUTER_"

// EnvName is the environment variable of a flag: EnvPrefix, then the flag
// name upper-cased with '-' as '_' (--busy-kv-usage: KVROUTER_BUSY_KV_USAGE;
// --config: KVROUTER_CONFIG).
func EnvName(flag string) string { return clihelp.EnvName(EnvPrefix, flag) }

// Resolve builds a command's effective configuration with the precedence
// flag > environment > file > default:
//
//   - def holds the defaults;
//   - the YAML file named by the "config" flag (or KVROUTER_CONFIG) is
//     decoded over them (LoadFile: unknown keys are errors);
//   - every flag bind declares is then taken from parsed when it was set
//     on the command line, else from its environment variable (EnvName)
//     when that is set. A list flag's variable holds the items separated
//     by white space. A KVROUTER_* variable that names no flag of parsed
//     is an error (CheckEnv), so a typo is not silently ignored;
//   - every numeric flag is then checked against FlagRanges, whichever
//     source set it (CheckFlagRanges).
//
// bind must bind each flag to a field of the config it is given, with the
// field's current value as the flag's default (so binding changes
// nothing); parsed is the flag set the command line was parsed into (bound
// by the same bind to another copy). environ is os.Environ() outside
// tests.
func Resolve[T any](parsed *pflag.FlagSet, def T, bind func(*pflag.FlagSet, *T), environ []string) (T, error) {
	cfg := def
	if err := CheckEnv(parsed, environ); err != nil {
		return cfg, err
	}
	lookupEnv := envLookup(environ)
	path := ""
	if f := parsed.Lookup("config"); f != nil && f.Changed {
		path = f.Value.String()
	} else if v, ok := lookupEnv(EnvName("config")); ok {
		path = v
	}
	if path != "" {
		if err := LoadFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	fs := pflag.NewFlagSet("resolve", pflag.ContinueOnError)
	bind(fs, &cfg)
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if pf := parsed.Lookup(f.Name); pf != nil && pf.Changed {
			if err := copyValue(f.Value, pf.Value); err != nil {
				errs = append(errs, fmt.Errorf("--%s: %w", f.Name, err))
			}
			return
		}
		v, ok := lookupEnv(EnvName(f.Name))
		if !ok {
			return
		}
		var err error
		if sv, isList := f.Value.(pflag.SliceValue); isList {
			err = sv.Replace(strings.Fields(v))
		} else {
			err = f.Value.Set(strings.TrimSpace(v))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvName(f.Name), err))
		}
	})
	// Before anything is built from it: a size far out of range would
	// allocate before any Validate ran.
	errs = append(errs, CheckFlagRanges(fs, &cfg))
	return cfg, errors.Join(errs...)
}

// copyValue sets dst to src's value (same flag, another config).
func copyValue(dst, src pflag.Value) error {
	if s, ok := src.(pflag.SliceValue); ok {
		if d, ok := dst.(pflag.SliceValue); ok {
			return d.Replace(s.GetSlice())
		}
	}
	return dst.Set(src.String())
}

// LoadFile decodes the YAML file at path over cfg (fields it does not name
// keep their values). Unknown keys are errors naming the key and its line,
// and a key that moved (movedKeys) names its new place.
func LoadFile(path string, cfg any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s: %w", path, errors.Join(movedKeyErrors(b), err))
	}
	return nil
}

// WriteYAML writes cfg in the --config shape (what --print-config prints;
// LoadFile reads it back to the same config). Secrets are written as they
// are: it is the user's own configuration, asked for.
func WriteYAML(w io.Writer, cfg any) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return enc.Close()
}

// masked replaces a secret in logs; empty stays empty (no secret set).
func masked(s string) string {
	if s == "" {
		return ""
	}
	return "*****"
}

func maskedList(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = masked(s)
	}
	return out
}

// Redacted returns c with its secrets (API keys, admin keys, NATS
// password and token) masked, for logs.
func (c ServeConfig) Redacted() ServeConfig {
	c.Frontend.APIKeys = maskedList(c.Frontend.APIKeys)
	c.Frontend.AdminKeys = maskedList(c.Frontend.AdminKeys)
	c.NATS.Password, c.NATS.Token = masked(c.NATS.Password), masked(c.NATS.Token)
	return c
}

// Redacted returns c with its NATS secrets masked, for logs.
func (c MockerConfig) Redacted() MockerConfig {
	c.NATS.Password, c.NATS.Token = masked(c.NATS.Password), masked(c.NATS.Token)
	return c
}

// Redacted returns c with its NATS secrets masked, for logs.
func (c BridgeConfig) Redacted() BridgeConfig {
	c.NATS.Password, c.NATS.Token = masked(c.NATS.Password), masked(c.NATS.Token)
	return c
}

// logConfig logs the effective configuration once, as one record whose
// attributes are the YAML form's keys flattened with dots
// (router.selector.overlap_credit=1). Pass it redacted.
func logConfig(log *slog.Logger, msg string, cfg any) {
	var n yaml.Node
	if err := n.Encode(cfg); err != nil {
		log.Warn(msg+": cannot encode", "err", err)
		return
	}
	var attrs []any
	flatten(&n, "", func(k, v string) { attrs = append(attrs, slog.String(k, v)) })
	log.Info(msg, attrs...)
}

func flatten(n *yaml.Node, prefix string, emit func(k, v string)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			flatten(c, prefix, emit)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if prefix != "" {
				k = prefix + "." + k
			}
			flatten(n.Content[i+1], k, emit)
		}
	case yaml.SequenceNode:
		vals := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			vals = append(vals, c.Value)
		}
		emit(prefix, "["+strings.Join(vals, ",")+"]")
	default:
		emit(prefix, n.Value)
	}
}

// NewLogger returns a text logger on stderr at level (debug, info, warn,
// error).
func NewLogger(level string) (*slog.Logger, error) {
	l, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// loggerOr is given, or when it is nil a NewLogger(level).
func loggerOr(given *slog.Logger, level string) (*slog.Logger, error) {
	if given != nil {
		return given, nil
	}
	return NewLogger(level)
}

func parseLevel(level string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return l, fmt.Errorf("log level %q: %w", level, err)
	}
	return l, nil
}

// placeholderTokenizer stands in for a tokenizer not loaded yet, so that
// Validate can check the rest of a config before anything is loaded.
type placeholderTokenizer struct{}

func (placeholderTokenizer) Name() string { return "placeholder" }
func (placeholderTokenizer) Encode(context.Context, string) ([]uint32, error) {
	return nil, errors.New("app: placeholder tokenizer")
}
func (placeholderTokenizer) EncodeChat(context.Context, []tokenizer.Message, bool) ([]uint32, error) {
	return nil, errors.New("app: placeholder tokenizer")
}
