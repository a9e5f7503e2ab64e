package app

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/mockerd"
	"github.com/kvrouter/kvrouter/router"
	"github.com/spf13/pflag"
)

// Range is the values a numeric flag accepts: Lo..Hi (Hi excluded when
// HiOpen), and any negative value too when NegativeOff (the flag's
// "negative = off" setting). NaN is never in range.
type Range struct {
	Lo, Hi      float64
	HiOpen      bool
	NegativeOff bool
	duration    bool // Lo and Hi are time.Duration values (printing)
}

// Ints, Floats and Durations are closed ranges of each kind.
func Ints(lo, hi int64) Range     { return Range{Lo: float64(lo), Hi: float64(hi)} }
func Floats(lo, hi float64) Range { return Range{Lo: lo, Hi: hi} }
func Durations(lo, hi time.Duration) Range {
	return Range{Lo: float64(lo), Hi: float64(hi), duration: true}
}

// OrNegative also accepts any negative value; Open excludes Hi.
func (r Range) OrNegative() Range { r.NegativeOff = true; return r }
func (r Range) Open() Range       { r.HiOpen = true; return r }

func (r Range) contains(v float64) bool {
	in := v >= r.Lo && (v < r.Hi || (!r.HiOpen && v == r.Hi))
	return in || (r.NegativeOff && v < 0)
}

// finite is [0, +inf) without the infinities.
func finite() Range               { return Floats(0, math.MaxFloat64) }
func ports(lo int64) Range        { return Ints(lo, 65535) }
func durs(hi time.Duration) Range { return Durations(0, hi) }
func uints(lo uint64) Range       { return Range{Lo: float64(lo), Hi: math.Inf(1)} }

func boundText(v float64, dur bool) string {
	switch {
	case math.IsInf(v, 1) || v == math.MaxFloat64:
		return "+inf"
	case dur:
		return time.Duration(v).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// String is the range as error messages give it: "[0, 1024]", "[0, 1)",
// "[0, +inf) finite", with "or negative (off)" when so.
func (r Range) String() string {
	closing := "]"
	if r.HiOpen || r.Hi == math.MaxFloat64 || math.IsInf(r.Hi, 1) {
		closing = ")"
	}
	s := "[" + boundText(r.Lo, r.duration) + ", " + boundText(r.Hi, r.duration) + closing
	if r.Hi == math.MaxFloat64 {
		s += " finite"
	}
	if r.NegativeOff {
		s += ", or negative (off)"
	}
	return s
}

// Bounds of flags with no bound elsewhere (DESIGN.md has the defaults).
const (
	// MaxUpWorkers bounds `kvrouter up --workers`: each worker is an
	// engine, an HTTP listener and its goroutines in the one process.
	MaxUpWorkers = 256
	// MaxRetries bounds --retries (other workers tried for one request).
	MaxRetries = 64
	// MaxBodyBytesLimit bounds --max-body-bytes: a body is held whole
	// (serve reads it, the endpoint picker accumulates it).
	MaxBodyBytesLimit = 1 << 30
	// MaxSnapshotKeep bounds --snapshot-keep.
	MaxSnapshotKeep = 100
	maxFallbacks    = 16 // epp.MaxFallbacks (epp imports this package)
	day             = 24 * time.Hour
	week            = 7 * day
	year            = 365 * day
	maxTokens       = frontend.MaxOutputCeiling
)

// FlagRanges are the accepted values of every numeric flag of serve, epp,
// up, mocker and bridge, by flag name (a name means the same in every
// command that has it). Resolve checks them before a command builds
// anything, so a value out of range is refused naming the flag, its
// environment variable and its YAML key.
var FlagRanges = map[string]Range{
	// Router core and cost model.
	"block-size":                Ints(1, discovery.MaxBlockSize),
	"index-writers":             Ints(0, indexer.MaxWriters),
	"jump-stride":               Ints(0, 1<<16),
	"approx-ttl":                durs(day),
	"active-request-weight":     finite(),
	"imposed-weight":            finite(),
	"overlap-credit":            finite(),
	"prefill-load-scale":        finite(),
	"host-weight":               finite(),
	"disk-weight":               finite(),
	"shared-weight":             finite(),
	"credit-decay":              finite(),
	"temperature":               finite(),
	"busy-kv-usage":             Floats(0, 1),
	"busy-prefill-tokens":       Ints(0, discovery.MaxBatchedTokens),
	"busy-prefill-fraction":     finite(),
	"queue-threshold":           finite(),
	"queue-capacity":            Ints(0, 1<<24),
	"queue-max-tenants":         Ints(0, 1<<20),
	"predict-ttl":               durs(day),
	"affinity-ttl":              durs(year),
	"stale-limit":               durs(week),
	"disagg-isl-threshold":      Ints(0, maxTokens),
	"disagg-load-threshold":     finite(),
	"disagg-transfer-weight":    finite(),
	"peer-hint-min-blocks":      Ints(0, 1<<20),
	"prefill-timeout":           durs(day),
	"kv-bytes-per-token":        Ints(0, 1<<30),
	"worker-max-num-seqs":       Ints(0, discovery.MaxNumSeqs),
	"worker-max-batched-tokens": Ints(0, discovery.MaxBatchedTokens),
	"seed":                      uints(0),
	// Serving path and client bounds.
	"max-body-bytes":          Ints(0, MaxBodyBytesLimit),
	"max-prompt-tokens":       Ints(0, maxTokens),
	"max-model-len":           Ints(0, maxTokens),
	"retries":                 Ints(0, MaxRetries),
	"drain-timeout":           durs(day),
	"load-poll":               durs(day).OrNegative(),
	"body-timeout":            durs(day).OrNegative(),
	"idle-timeout":            durs(day).OrNegative(),
	"max-bodies":              Ints(0, 1<<20).OrNegative(),
	"prompt-bytes-per-token":  Ints(0, 1<<16).OrNegative(),
	"tokenizers":              Ints(0, 4096).OrNegative(),
	"tokenize-queue":          Ints(0, 1<<20),
	"tokenize-queue-bytes":    Ints(0, 1<<40).OrNegative(),
	"max-streams":             Ints(0, 1<<24).OrNegative(),
	"max-stream-buffer-bytes": Ints(0, 1<<44).OrNegative(),
	"sync-max-peers":          Ints(0, 1<<16),
	"booking-ttl":             durs(day).OrNegative(),
	"max-tracked-per-key":     Ints(0, 1<<20).OrNegative(),
	"max-bookings":            Ints(0, 1<<24).OrNegative(),
	"max-booking-bytes":       Ints(0, 1<<40).OrNegative(),
	"stream-write-timeout":    durs(day).OrNegative(),
	"max-answer-bytes":        Ints(0, 1<<40).OrNegative(),
	"session-id-max-bytes":    Ints(0, 1<<20),
	"affinity-max-sessions":   Ints(0, 1<<30),
	"affinity-max-bytes":      Ints(0, 1<<40),
	// Event plane and replicas.
	"embedded-nats-port":    ports(0),
	"nats-port":             ports(0),
	"stream-max-age":        durs(10 * year),
	"stream-max-bytes":      Ints(0, 1<<50),
	"stream-replicas":       Ints(0, 5),
	"snapshot-interval":     durs(week),
	"snapshot-keep":         Ints(0, MaxSnapshotKeep),
	"snapshot-max-bytes":    Ints(0, 1<<40),
	"zmq-max-message-bytes": Ints(0, 1<<32),
	"zmq-hold-max-bytes":    Ints(0, 1<<40),
	"lease-ttl":             durs(day),
	"sync-heartbeat":        durs(time.Hour),
	"sync-timeout":          durs(day),
	// The endpoint picker.
	"fallbacks":            Ints(0, maxFallbacks),
	"pool-target-port":     ports(1),
	"pool-zmq-port":        ports(0),
	"pool-zmq-replay-port": ports(0),
	"pool-resync":          durs(week),
	// Mocker workers (mocker, up) and the bridge.
	"workers":                Ints(1, MaxUpWorkers),
	"port":                   ports(0),
	"worker-id":              uints(0), // any id; the bridge's Validate requires one (> 0)
	"num-blocks":             Ints(1, 1<<30),
	"max-num-seqs":           Ints(1, discovery.MaxNumSeqs),
	"max-num-batched-tokens": Ints(1, discovery.MaxBatchedTokens),
	"default-max-tokens":     Ints(0, maxTokens),
	"max-loras":              Ints(0, mockerd.MaxLoRASlots),
	"watermark":              Floats(0, 1).Open(),
	"speedup-ratio":          finite(),
	"kv-transfer-bandwidth":  finite(),
	"kv-transfer-latency":    durs(time.Hour),
	"hold-timeout":           durs(day),
	"offload-min-reuse":      Ints(0, 1<<20),
	"dp-size":                Ints(1, router.MaxDPSize),

	// kvrouter-study bench frontend (0 = rounds until the verdicts are
	// decided; an hour of 10 s phases is the most anyone asks for).
	"rounds": Ints(0, 1000),

	// The decision log (serve).
	"decision-log-sample":    Ints(0, 1<<30),
	"decision-log-max-bytes": Ints(0, 1<<40),
	"decision-log-rate":      Ints(0, 1<<20),
}

// CheckFlagRanges checks every numeric flag of fs that FlagRanges names
// against its range and reports each one out of range, joined, naming the
// flag, and, when cfg (the config fs is bound to) is given, its
// environment variable and YAML key. A nil cfg is a command that reads
// neither (up). Flags FlagRanges does not name are not checked here.
func CheckFlagRanges(fs *pflag.FlagSet, cfg any) error {
	var keys map[uintptr]string
	if cfg != nil {
		keys = yamlKeys(cfg)
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		r, ok := FlagRanges[f.Name]
		if !ok {
			return
		}
		v, ok := numericValue(f.Value)
		if !ok || r.contains(v) {
			return
		}
		where := ""
		if cfg != nil {
			where = " (" + EnvName(f.Name)
			if k := keys[valuePointer(f.Value)]; k != "" {
				where += ", YAML " + k
			}
			where += ")"
		}
		errs = append(errs, fmt.Errorf("--%s %s%s: out of range, want %s", f.Name, f.Value.String(), where, r))
	})
	return errors.Join(errs...)
}

// IsNumericFlag reports whether a flag's value is a number or a duration
// (the flags FlagRanges must name).
func IsNumericFlag(f *pflag.Flag) bool {
	_, ok := numericValue(f.Value)
	return ok
}

func numericValue(v pflag.Value) (float64, bool) {
	s := v.String()
	switch v.Type() {
	case "int", "int8", "int16", "int32", "int64":
		n, err := strconv.ParseInt(s, 10, 64)
		return float64(n), err == nil
	case "uint", "uint8", "uint16", "uint32", "uint64":
		n, err := strconv.ParseUint(s, 10, 64)
		return float64(n), err == nil
	case "float32", "float64":
		n, err := strconv.ParseFloat(s, 64)
		return n, err == nil
	case "duration":
		d, err := time.ParseDuration(s)
		return float64(d), err == nil
	}
	return 0, false
}

// valuePointer is the address of the field a pflag value is bound to
// (pflag's values are pointers to the bound variable).
func valuePointer(v pflag.Value) uintptr {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return 0
	}
	return rv.Pointer()
}

// yamlKeys maps the address of every numeric field of *cfg to its key in
// the YAML form (dotted; inline structs add nothing).
func yamlKeys(cfg any) map[uintptr]string {
	out := map[uintptr]string{}
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return out
	}
	walkYAML(v.Elem(), "", out)
	return out
}

func walkYAML(v reflect.Value, prefix string, out map[uintptr]string) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		key := name
		switch {
		case strings.Contains(opts, "inline"):
			key = prefix
		case prefix != "":
			key = prefix + "." + name
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			walkYAML(fv, key, out)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			out[fv.Addr().Pointer()] = key
		}
	}
}
