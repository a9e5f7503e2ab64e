package cli

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/router"
)

// BindTenants binds the fair queue's flags to rc.Queue.
func BindTenants(f *pflag.FlagSet, rc *router.Config) {
	q := &rc.Queue
	f.BoolVar(&q.Fair, "queue-fair", q.Fair, "release queued requests by weighted deficit round robin across tenants (header "+
		queue.TenantHeader+"), --queue-policy within one; only acts when requests queue (--queue-threshold > 0)")
	f.Var(&tenantWeights{&q.TenantWeights}, "tenant-weight",
		"a tenant's fair-queue weight as name=w (w > 0), comma-separated or repeated (default 1 each)")
	f.IntVar(&q.MaxTenants, "queue-max-tenants", q.MaxTenants,
		"tenants with a fair sub-queue of their own at once; requests of further tenants share one (0 = no bound)")
}

// tenantWeights is --tenant-weight's value: name=w pairs, comma-separated
// or repeated; a later pair for a name replaces the earlier. String gives
// them back sorted by name, so setting the flag to its String is
// idempotent.
type tenantWeights struct{ p *map[string]float64 }

func (w *tenantWeights) String() string {
	if w.p == nil || len(*w.p) == 0 {
		return ""
	}
	var b strings.Builder
	for i, n := range slices.Sorted(maps.Keys(*w.p)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + strconv.FormatFloat((*w.p)[n], 'g', -1, 64))
	}
	return b.String()
}

func (w *tenantWeights) Type() string { return "strings" }

func (w *tenantWeights) Set(v string) error {
	for _, kv := range strings.Split(v, ",") {
		if err := w.Append(kv); err != nil {
			return err
		}
	}
	return nil
}

// Append, Replace and GetSlice make it a pflag.SliceValue (app.Resolve:
// a flag's environment variable holds pairs separated by white space).
func (w *tenantWeights) Append(kv string) error {
	kv = strings.TrimSpace(kv)
	if kv == "" {
		return nil
	}
	name, val, ok := strings.Cut(kv, "=")
	x, err := strconv.ParseFloat(val, 64)
	if !ok || name == "" || err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return fmt.Errorf("tenant weight %q: want name=w with w > 0", kv)
	}
	if *w.p == nil {
		*w.p = make(map[string]float64)
	}
	(*w.p)[name] = x
	return nil
}

func (w *tenantWeights) Replace(kvs []string) error {
	*w.p = nil
	for _, kv := range kvs {
		if err := w.Set(kv); err != nil {
			return err
		}
	}
	return nil
}

func (w *tenantWeights) GetSlice() []string {
	if s := w.String(); s != "" {
		return strings.Split(s, ",")
	}
	return nil
}
